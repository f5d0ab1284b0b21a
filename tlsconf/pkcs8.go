package tlsconf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// An encrypted PKCS#8 key (RFC 5958) with PBES2 (RFC 8018): PBKDF2 and
// AES-CBC, what OpenSSL 3 writes for openssl genpkey -aes256 or
// openssl pkcs8 -topk8. The standard library reads only unencrypted
// PKCS#8.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type algorithm struct {
	OID    asn1.ObjectIdentifier
	Params asn1.RawValue `asn1:"optional"`
}

type encryptedKeyInfo struct {
	Algorithm algorithm
	Data      []byte
}

type pbes2Params struct {
	KDF    algorithm
	Scheme algorithm
}

type pbkdf2Params struct {
	Salt      []byte
	Iter      int
	KeyLength int       `asn1:"optional"`
	PRF       algorithm `asn1:"optional"`
}

// maxIterations bounds PBKDF2's work for a key file's claim.
const maxIterations = 10_000_000

// decryptPKCS8 returns the DER of the unencrypted PKCS#8 key.
func decryptPKCS8(der, pass []byte) ([]byte, error) {
	var info encryptedKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("encrypted key: malformed PKCS#8")
	}
	if !info.Algorithm.OID.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted key: scheme %v is not PBES2 (re-encrypt it with openssl pkcs8 -topk8 -v2 aes256)", info.Algorithm.OID)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Params.FullBytes, &p); err != nil {
		return nil, errors.New("encrypted key: malformed PBES2 parameters")
	}
	if !p.KDF.OID.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted key: key derivation %v is not PBKDF2", p.KDF.OID)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Params.FullBytes, &kp); err != nil {
		return nil, errors.New("encrypted key: malformed PBKDF2 parameters")
	}
	if kp.Iter < 1 || kp.Iter > maxIterations {
		return nil, fmt.Errorf("encrypted key: %d PBKDF2 iterations", kp.Iter)
	}
	var prf func() hash.Hash
	switch {
	case len(kp.PRF.OID) == 0 || kp.PRF.OID.Equal(oidHMACSHA1):
		prf = sha1.New
	case kp.PRF.OID.Equal(oidHMACSHA256):
		prf = sha256.New
	case kp.PRF.OID.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("encrypted key: PBKDF2 function %v is not supported", kp.PRF.OID)
	}
	var keyLen int
	switch {
	case p.Scheme.OID.Equal(oidAES128CBC):
		keyLen = 16
	case p.Scheme.OID.Equal(oidAES192CBC):
		keyLen = 24
	case p.Scheme.OID.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("encrypted key: cipher %v is not AES-CBC", p.Scheme.OID)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Scheme.Params.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("encrypted key: malformed AES-CBC IV")
	}
	if len(info.Data) == 0 || len(info.Data)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted key: the data is not whole AES blocks")
	}
	key, err := pbkdf2.Key(prf, string(pass), kp.Salt, kp.Iter, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; a wrong passphrase shows here (or as garbage that
	// does not parse as a key).
	n := int(out[len(out)-1])
	if n < 1 || n > aes.BlockSize {
		return nil, errors.New("encrypted key: wrong passphrase (tls-key-file-pass)")
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, errors.New("encrypted key: wrong passphrase (tls-key-file-pass)")
		}
	}
	return out[:len(out)-n], nil
}

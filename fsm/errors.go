package fsm

// Error replies, byte for byte as Redis 7.0 sends them.
const (
	msgWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
	msgSyntax        = "ERR syntax error"
	msgNotInt        = "ERR value is not an integer or out of range"
	msgNotFloat      = "ERR value is not a valid float"
	msgOverflow      = "ERR increment or decrement would overflow"
	msgNoSuchKey     = "ERR no such key"
	msgDBIndex       = "ERR DB index is out of range"
	msgInvalidExpire = "ERR invalid expire time in '%s' command"
	msgOutOfRange    = "ERR index out of range"
	msgNaN           = "ERR resulting score is not a number (NaN)"
	msgHashNotInt    = "ERR hash value is not an integer"
	msgHashNotFloat  = "ERR hash value is not a float"
	msgMinMaxFloat   = "ERR min or max is not a float"
	msgNoScript      = "NOSCRIPT No matching script. Please use EVAL."
	msgWriteInRead   = "ERR write command on the read path"
	msgStringTooLong = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
)

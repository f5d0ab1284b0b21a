//go:build numgold

package fsm

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestNumberGold(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	var in []string
	hand := []string{"0", "-0", "+0", "0.1", "1", "1.5", "10.5", "-1.5e3", ".5", "1.", ".", "-", "+", "", " 1", "1 ", "\t1", "1e", "1e+", "1e-", "1e5", "1E5", "1e+05", "0x", "0x1", "0x1p", "0x1p3", "0X1P-2", "0x.8", "0x.", "0x1.8p1", "0xg", "1_0", "inf", "INF", "-inf", "+inf", "infinity", "-Infinity", "infinit", "infx", "nan", "-nan", "NaN", "nan(123)", "nan(", "00", "007", "1e308", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "2e308", "4.9e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-324", "1e-400", "1e400", "1e4932", "1.18973149535723176502e+4932", "1.18973149535723176508e+4932", "1.2e4932", "3.6e-4951", "1.8e-4951", "1.9e-4951", "1e-4951", "3.4e-4932", "1e-5000", "0e99999999999", "0e-99999999999", "1e99999999999", "1e-99999999999", "12345678901234567890", "9223372036854775807", "-9223372036854775808", "922337203685477", "1795342092073", "0.30000000000000004", "3e-18", "1e17", "1e16", "123456789012345678", "0.0001", "0.00001", "1e20", "1e-20", "5e-324", "0x1p-1074", "0x1p-1075", "0x1.0000000000001p-1075", "0x1p-16445", "0x1p-16446", "0x1.1p-16446", "0x1p16383", "0x1p16384", "0x1.fffffffffffffffep16383", "0x1.ffffffffffffffffp16383", "3.14abc", "++1", "-+1", "1..2", "1.2.3", "1e1.5", "-.5e-3", "0.000000000000000000000000000000000000000001"}
	for _, s := range hand {
		in = append(in, "p "+s)
	}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		if rnd.Intn(4) == 0 {
			b.WriteByte('-')
		}
		hex := rnd.Intn(5) == 0
		if hex {
			b.WriteString("0x")
		}
		n := 1 + rnd.Intn(25)
		pt := rnd.Intn(n + 1)
		for j := 0; j < n; j++ {
			if j == pt && rnd.Intn(2) == 0 {
				b.WriteByte('.')
			}
			if hex {
				b.WriteByte("0123456789abcdef"[rnd.Intn(16)])
			} else {
				b.WriteByte(byte('0' + rnd.Intn(10)))
			}
		}
		switch rnd.Intn(4) {
		case 0:
			if hex {
				fmt.Fprintf(&b, "p%d", rnd.Intn(2200)-1100)
			} else {
				fmt.Fprintf(&b, "e%d", rnd.Intn(700)-350)
			}
		case 1:
			if hex {
				fmt.Fprintf(&b, "p%d", rnd.Intn(33000)-16500)
			} else {
				fmt.Fprintf(&b, "e%d", rnd.Intn(10000)-4980)
			}
		}
		in = append(in, "p "+b.String())
	}
	pool := []string{"0.1", "0.2", "10.5", "-10.5", "1e4932", "1.1e4932", "-1e4932", "3.0e-4951", "inf", "-inf", "1", "-1", "0", "-0", "5.0e+3", "1e-17", "0.3", "17179869184", "1.5", "9223372036854775807", "1e308", "1e-20", "100", "0.0001"}
	for i := 0; i < 1500; i++ {
		a, b := pool[rnd.Intn(len(pool))], pool[rnd.Intn(len(pool))]
		if rnd.Intn(2) == 0 {
			a = strconv.FormatFloat(rnd.NormFloat64()*math.Pow(10, float64(rnd.Intn(40)-20)), 'g', -1, 64)
			b = strconv.FormatFloat(rnd.NormFloat64()*math.Pow(10, float64(rnd.Intn(40)-20)), 'g', -1, 64)
		}
		in = append(in, "a "+a+" "+b)
	}
	for i := 0; i < 5000; i++ {
		var f float64
		switch rnd.Intn(4) {
		case 0:
			f = math.Float64frombits(rnd.Uint64())
		case 1:
			f = float64(rnd.Int63n(1<<60)) / math.Pow(10, float64(rnd.Intn(25)))
		case 2:
			f = rnd.NormFloat64() * math.Pow(10, float64(rnd.Intn(60)-30))
		default:
			f = math.Round(rnd.NormFloat64()*1e6) / 64
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		in = append(in, "g "+strconv.FormatFloat(f, 'x', -1, 64))
	}
	cmd := exec.Command("/tmp/numgold/gold")
	cmd.Stdin = strings.NewReader(strings.Join(in, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	bad := 0
	for i := 0; sc.Scan(); i++ {
		want := sc.Text()
		line := in[i]
		var got string
		s := line[2:]
		switch line[0] {
		case 'p':
			d, okd := parseFloat([]byte(s))
			got = b2s(okd) + "|"
			if okd {
				got += string(formatScore(d))
			}
			ld, okld := parseLongDouble([]byte(s))
			got += "|" + b2s(okld) + "|"
			if okld {
				got += string(formatLongDouble(ld))
			}
			r, okr := parseStrtod([]byte(s))
			got += "|" + b2s(okr) + "|"
			if okr {
				got += string(formatScore(r))
			}
		case 'a':
			parts := strings.SplitN(s, " ", 2)
			a, oka := parseLongDouble([]byte(parts[0]))
			b, okb := parseLongDouble([]byte(parts[1]))
			if !oka || !okb {
				got = "bad"
				break
			}
			sum, ok := addLongDouble(a, b)
			if !ok {
				got = "naninf"
				break
			}
			got = string(formatLongDouble(sum))
		case 'g':
			f, _ := strconv.ParseFloat(s, 64)
			got = string(formatScore(f)) + "|" + string(formatFloat(f))
		}
		if got != want {
			bad++
			if bad < 40 {
				t.Errorf("%q: got %q want %q", line, trunc(got), trunc(want))
			}
		}
	}
	t.Logf("%d cases, %d bad", len(in), bad)
}

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func trunc(s string) string {
	if len(s) > 120 {
		return s[:60] + "..." + s[len(s)-60:]
	}
	return s
}

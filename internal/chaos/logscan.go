package chaos

import (
	"bufio"
	"os"
	"regexp"
)

// badLine matches what must never appear in a node's log: a panic (also a
// handler panic the server recovered from), a data race report, a fatal
// runtime error.
var badLine = regexp.MustCompile(`(?i)panic|DATA RACE|fatal error|level=FATAL|SIGSEGV|concurrent map`)

// ScanLog returns the lines of the file at path that report a panic, a
// race or a fatal error (at most limit of them).
func ScanLog(path string, limit int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(out) < limit {
		if badLine.Match(sc.Bytes()) {
			out = append(out, sc.Text())
		}
	}
	return out, sc.Err()
}

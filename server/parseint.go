package server

import (
	"errors"

	"github.com/deadbolt/deadbolt/fsm"
)

// errNotInteger is parseInt's error; callers answer with their own text.
var errNotInteger = errors.New("not an integer")

// parseInt reads a command's integer argument as Redis's string2ll does
// (fsm.ParseInteger): "+5", "05", "-0" and " 5" are not integers, which
// strconv.ParseInt would take.
func parseInt(b []byte) (int64, error) {
	if n, ok := fsm.ParseInteger(b); ok {
		return n, nil
	}
	return 0, errNotInteger
}

package luaexec

import (
	"encoding/binary"
	"errors"
)

// State returns the part of the scripting environment that outlives a
// script run, as Redis 7.0 keeps it: the math.random generator (never
// reseeded between scripts) and the cjson settings. A replicated state
// machine must store it in its snapshots and restore it with SetState, or
// replicas that start from a snapshot would draw different random numbers.
// The encoding is versioned and compact.
func (e *Engine) State() []byte {
	c := e.cjsonCfg
	b := []byte{stateVersion}
	b = binary.AppendUvarint(b, e.rand.state())
	for _, v := range []int{c.sparseConvert, c.sparseRatio, c.sparseSafe, c.encodeMaxDepth,
		c.decodeMaxDepth, c.encodeInvalid, c.decodeInvalid, c.keepBuffer, c.precision} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

const stateVersion = 1

// ErrBadState is returned by SetState for data that State did not produce.
var ErrBadState = errors.New("luaexec: bad engine state")

// SetState restores what State returned. An empty state resets the
// generator and the cjson settings to their initial values.
func (e *Engine) SetState(b []byte) error {
	if len(b) == 0 {
		e.rand.reset()
		e.cjsonCfg = defaultCjsonConfig()
		return nil
	}
	if b[0] != stateVersion {
		return ErrBadState
	}
	b = b[1:]
	var vals [10]uint64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return ErrBadState
		}
		vals[i] = v
		b = b[n:]
	}
	if len(b) != 0 || vals[0] > rand48Mask {
		return ErrBadState
	}
	for _, v := range vals[1:] {
		if v > 1<<31-1 {
			return ErrBadState
		}
	}
	if vals[1] > 1 || vals[4] < 1 || vals[5] < 1 || vals[6] > 2 || vals[7] > 1 || vals[8] > 1 ||
		vals[9] < 1 || vals[9] > 14 {
		return ErrBadState
	}
	e.rand.setState(vals[0])
	e.cjsonCfg = cjsonConfig{
		sparseConvert: int(vals[1]), sparseRatio: int(vals[2]), sparseSafe: int(vals[3]),
		encodeMaxDepth: int(vals[4]), decodeMaxDepth: int(vals[5]), encodeInvalid: int(vals[6]),
		decodeInvalid: int(vals[7]), keepBuffer: int(vals[8]), precision: int(vals[9]),
	}
	return nil
}

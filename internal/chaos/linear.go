package chaos

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The register and list models for porcupine. An indeterminate operation
// gets a return time of +infinity and an output that accepts any result:
// it may take effect at any point after it was invoked, or never (being
// linearized after everything else is the same as never). Failed
// operations and indeterminate reads are left out: they changed nothing.

type regInput struct {
	f        string // read | write | cas
	arg, new string
}

type regOutput struct {
	value   string
	exists  bool
	ok      bool
	unknown bool
}

type regState struct {
	value  string
	exists bool
}

// RegisterModel is a string register with read, write and compare-and-set,
// partitioned by key.
var RegisterModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() interface{} { return regState{} },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		s, i, o := st.(regState), in.(keyed).in.(regInput), out.(regOutput)
		switch i.f {
		case "read":
			return o.value == s.value && o.exists == s.exists, s
		case "write":
			return true, regState{value: i.new, exists: true}
		case "cas":
			match := s.exists && s.value == i.arg
			if o.unknown {
				if match {
					return true, regState{value: i.new, exists: true}
				}
				return true, s
			}
			if o.ok != match {
				return false, s
			}
			if match {
				return true, regState{value: i.new, exists: true}
			}
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(keyed).in.(regInput), out.(regOutput)
		res := ""
		switch {
		case o.unknown:
			res = "?"
		case i.f == "read" && !o.exists:
			res = "nil"
		case i.f == "read":
			res = o.value
		case i.f == "cas":
			res = fmt.Sprint(o.ok)
		}
		return fmt.Sprintf("%s(%s %s) -> %s", i.f, i.arg, i.new, res)
	},
	DescribeState: func(st interface{}) string {
		s := st.(regState)
		if !s.exists {
			return "nil"
		}
		return s.value
	},
}

type listInput struct {
	f   string // read | append
	arg string
}

type listOutput struct {
	elems   string // comma-joined
	length  int64
	unknown bool
}

// ListModel is a list with append (returning the new length) and read of
// the whole list, partitioned by key. The state is the comma-joined list.
var ListModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() interface{} { return "" },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		s, i, o := st.(string), in.(keyed).in.(listInput), out.(listOutput)
		switch i.f {
		case "read":
			return o.elems == s, s
		case "append":
			next := i.arg
			if s != "" {
				next = s + "," + i.arg
			}
			if o.unknown {
				return true, next
			}
			return o.length == int64(strings.Count(next, ",")+1), next
		}
		return false, s
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(keyed).in.(listInput), out.(listOutput)
		switch {
		case o.unknown:
			return fmt.Sprintf("%s(%s) -> ?", i.f, i.arg)
		case i.f == "read":
			return fmt.Sprintf("read -> [%s]", o.elems)
		}
		return fmt.Sprintf("append(%s) -> %d", i.arg, o.length)
	},
	DescribeState: func(st interface{}) string { return "[" + st.(string) + "]" },
}

// keyed wraps an input with its key, for partitioning.
type keyed struct {
	key string
	in  interface{}
}

func partitionByKey(h []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range h {
		k := op.Input.(keyed).key
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], op)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, by[k])
	}
	return out
}

// Porcupine returns the operations of kind ("register" or "list") in
// porcupine's form, leaving out what cannot have had an effect.
func Porcupine(ops []Op, kind string) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		if op.Kind != kind || op.Outcome == Fail {
			continue
		}
		if op.Outcome == Info && op.F == "read" {
			continue
		}
		ret := op.Complete
		if op.Outcome == Info {
			ret = math.MaxInt64
		}
		var in, o interface{}
		switch kind {
		case "register":
			in = keyed{op.Key, regInput{f: op.F, arg: op.Arg, new: op.Arg2}}
			o = regOutput{value: op.Value, exists: op.Exists, ok: op.CASOK, unknown: op.Outcome == Info}
		case "list":
			in = keyed{op.Key, listInput{f: op.F, arg: op.Arg}}
			o = listOutput{elems: strings.Join(op.Elems, ","), length: op.Len, unknown: op.Outcome == Info}
		}
		out = append(out, porcupine.Operation{ClientId: op.Process, Input: in, Call: op.Invoke, Output: o, Return: ret})
	}
	return out
}

// LinearResult is the verdict on one workload.
type LinearResult struct {
	Kind   string
	Ops    int
	Keys   int
	Result porcupine.CheckResult
	Bad    []string // keys whose history is not linearizable
	info   porcupine.LinearizationInfo
	model  porcupine.Model
}

// CheckLinear checks the register or list history of ops with porcupine.
// A check that runs out of time is Unknown, not a violation.
func CheckLinear(ops []Op, kind string, timeout time.Duration) LinearResult {
	model := RegisterModel
	if kind == "list" {
		model = ListModel
	}
	h := Porcupine(ops, kind)
	parts := partitionByKey(h)
	r := LinearResult{Kind: kind, Ops: len(h), Keys: len(parts), model: model}
	r.Result, r.info = porcupine.CheckOperationsVerbose(model, h, timeout)
	if r.Result == porcupine.Illegal {
		// Name the keys: check each partition alone.
		for _, p := range parts {
			if porcupine.CheckOperationsTimeout(model, p, timeout) == porcupine.Illegal {
				r.Bad = append(r.Bad, p[0].Input.(keyed).key)
			}
		}
	}
	return r
}

// Visualize writes porcupine's HTML view of the checked history.
func (r LinearResult) Visualize(path string) error {
	return porcupine.VisualizePath(r.model, r.info, path)
}

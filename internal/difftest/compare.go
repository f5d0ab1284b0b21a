package difftest

import (
	"bytes"
	"slices"
)

// Equal reports whether two replies agree under the options.
func Equal(want, got Value, o Options) bool {
	switch {
	case o.Any:
		return true
	case o.AnyErr:
		return want.Kind == '-' && got.Kind == '-'
	case o.Shape:
		return sameShape(want, got)
	}
	want, got = normalize(want, o), normalize(got, o)
	if o.Tolerance >= 0 {
		return within(want, got, o.Tolerance)
	}
	return bytes.Equal(want.encode(nil), got.encode(nil))
}

// normalize applies skip, sorted and sortedpairs to a top-level array.
func normalize(v Value, o Options) Value {
	if !isAggregate(v.Kind) || v.Null {
		return v
	}
	elems := slices.Clone(v.Elems)
	if o.SortIn > 0 {
		if o.SortIn <= len(elems) {
			elems[o.SortIn-1] = normalize(elems[o.SortIn-1], Options{Sorted: true})
		}
		v.Elems = elems
		return v
	}
	if len(o.Skip) > 0 {
		for i := 0; i+1 < len(elems); i += 2 {
			if slices.Contains(o.Skip, string(elems[i].Str)) {
				elems[i+1] = Value{Kind: '+', Str: []byte("(skipped)")}
			}
		}
		// And in the maps of an array of maps (ACL LOG's entries).
		for i, e := range elems {
			if isAggregate(e.Kind) && !e.Null {
				elems[i] = normalize(e, Options{Skip: o.Skip})
			}
		}
	}
	switch {
	case o.Sorted && v.Kind == '%':
		v.Elems = elems
		return normalize(v, Options{SortedPairs: true})
	case o.Sorted:
		slices.SortStableFunc(elems, func(a, b Value) int {
			return bytes.Compare(a.encode(nil), b.encode(nil))
		})
	case o.SortedPairs && len(elems)%2 == 0:
		pairs := make([][2]Value, len(elems)/2)
		for i := range pairs {
			pairs[i] = [2]Value{elems[2*i], elems[2*i+1]}
		}
		slices.SortStableFunc(pairs, func(a, b [2]Value) int {
			if c := bytes.Compare(a[0].encode(nil), b[0].encode(nil)); c != 0 {
				return c
			}
			return bytes.Compare(a[1].encode(nil), b[1].encode(nil))
		})
		for i, p := range pairs {
			elems[2*i], elems[2*i+1] = p[0], p[1]
		}
	}
	v.Elems = elems
	return v
}

// within compares like bytes, except that two non-negative integers may
// differ by tol (negative ones are the -1/-2 codes of TTL and must match).
func within(a, b Value, tol int64) bool {
	if a.Kind != b.Kind || a.Null != b.Null {
		return false
	}
	switch a.Kind {
	case ':':
		if a.Int < 0 || b.Int < 0 {
			return a.Int == b.Int
		}
		d := a.Int - b.Int
		return -tol <= d && d <= tol
	case '*', '~', '%', '>':
		if len(a.Elems) != len(b.Elems) {
			return false
		}
		for i := range a.Elems {
			if !within(a.Elems[i], b.Elems[i], tol) {
				return false
			}
		}
		return true
	}
	return bytes.Equal(a.Str, b.Str)
}

func sameShape(a, b Value) bool {
	if a.Kind != b.Kind || a.Null != b.Null || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !sameShape(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

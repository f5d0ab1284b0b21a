package server

import "sort"

// deadbolt's own parameters: the flags of the deadbolt binary that are not
// Redis parameters (data-dir, raft-addr, heartbeat-timeout, ...), given
// as Config.ConfigParams, are parameters CONFIG GET shows (by name and by
// pattern, after Redis's) and CONFIG SET refuses as immutable.

// IsConfigParam reports whether name is a Redis parameter CONFIG knows.
func IsConfigParam(name string) bool { return paramByName[name] != nil }

// lookupParam returns the parameter name (lower case), Redis's or
// deadbolt's own, or nil.
func (s *Server) lookupParam(name string) *configParam {
	if p := paramByName[name]; p != nil {
		return p
	}
	if _, ok := s.cfg.ConfigParams[name]; ok {
		return &configParam{name: name, kind: pString, immutable: true}
	}
	return nil
}

// ownParams are deadbolt's own parameters, by name.
func (s *Server) ownParams() []*configParam {
	var out []*configParam
	for name := range s.cfg.ConfigParams {
		if paramByName[name] == nil {
			out = append(out, &configParam{name: name, kind: pString, immutable: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

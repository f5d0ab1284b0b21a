package server

// What the HTTP metrics endpoint (package httpapi) reads from a server at
// scrape time: counters the server keeps anyway, so that serving metrics
// adds nothing to the command path.

// ConnStats are the server's client connection counters.
type ConnStats struct {
	Current  int   // open now
	Accepted int64 // accepted since the start (or CONFIG RESETSTAT)
	Rejected int64 // refused: maxclients, protected mode
}

// ConnStats returns the connection counters.
func (s *Server) ConnStats() ConnStats {
	s.mu.Lock()
	cur := len(s.conns)
	s.mu.Unlock()
	return ConnStats{Current: cur, Accepted: s.stats.connections.Load(), Rejected: s.stats.rejected.Load()}
}

// PubSubStats are this node's pub/sub counters.
type PubSubStats struct {
	Channels, Patterns, ShardChannels int   // with at least one subscriber here
	Delivered                         int64 // messages queued to this node's subscribers, ever
}

// PubSubStats returns the pub/sub counters.
func (s *Server) PubSubStats() PubSubStats {
	h := s.hub
	h.mu.RLock()
	st := PubSubStats{Channels: len(h.subs[subChannel]), Patterns: len(h.subs[subPattern]), ShardChannels: len(h.subs[subShard])}
	h.mu.RUnlock()
	st.Delivered = h.delivered.Load()
	return st
}

// ErrorStats returns how many error replies of each kind (the reply's
// first word, "ERR", "WRONGTYPE") the server sent.
func (s *Server) ErrorStats() map[string]int64 {
	es := &s.errStats
	es.mu.Lock()
	defer es.mu.Unlock()
	out := make(map[string]int64, len(es.count))
	for k, v := range es.count {
		out[k] = v
	}
	return out
}

package server

import (
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/glob"
	"github.com/deadbolt/deadbolt/resp"
)

func init() {
	registerConn(
		connSpec{name: "info", arity: -1, fn: cmdInfo},
	)
}

// KeyspaceStats is implemented by a backend that can count a database's
// keys for INFO keyspace. Keys past their deadline but not yet reaped
// count, as in Redis.
type KeyspaceStats interface {
	KeyspaceStats(db int) (keys, expires int)
}

// ScriptStats is implemented by a backend that can count its cached
// scripts (INFO memory's number_of_cached_scripts).
type ScriptStats interface {
	ScriptCount() int
}

// LogicalMemoryReader is implemented by a backend whose state machine
// keeps the logical size of its data that maxmemory limits (the same on
// every node): INFO memory's used_memory_logical, and, without a lock,
// whether it is over maxmemory (a command queued in MULTI is then
// refused).
type LogicalMemoryReader interface {
	LogicalMemory() (used, limit int64)
	OverMaxmemory() bool
}

// overMaxmemory reports whether this node's state machine is over
// maxmemory.
func (s *Server) overMaxmemory() bool {
	lm, ok := s.backend.(LogicalMemoryReader)
	return ok && lm.OverMaxmemory()
}

// queuedWriteRefused returns the MISCONF error args, a command being
// queued in MULTI, gets now on this node (a full disk), or "".
func (s *Server) queuedWriteRefused(args [][]byte) string {
	if w, ok := s.backend.(interface{ QueuedWriteRefused([][]byte) error }); ok {
		if err := w.QueuedWriteRefused(args); err != nil {
			return errorText(err)
		}
	}
	return ""
}

// INFO's sections in Redis 7.0's order, and those INFO without arguments
// (or INFO default) shows.
var (
	infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu",
		"modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}
	infoDefault = map[string]bool{"server": true, "clients": true, "memory": true, "persistence": true,
		"stats": true, "replication": true, "cpu": true, "modules": true, "errorstats": true,
		"cluster": true, "keyspace": true}
	infoTitles = map[string]string{"server": "Server", "clients": "Clients", "memory": "Memory",
		"persistence": "Persistence", "stats": "Stats", "replication": "Replication", "cpu": "CPU",
		"modules": "Modules", "commandstats": "Commandstats", "errorstats": "Errorstats",
		"latencystats": "Latencystats", "cluster": "Cluster", "keyspace": "Keyspace"}
)

// cmdInfo is INFO [section ...]: the chosen sections in Redis's order,
// each "# Title\r\n" and "field:value\r\n" lines, separated by "\r\n".
// Unknown sections are ignored.
func cmdInfo(c *conn, args [][]byte) {
	want := infoDefault
	if len(args) > 1 {
		want = make(map[string]bool)
		for _, a := range args[1:] {
			switch name := strings.ToLower(string(a)); name {
			case "all", "everything":
				for _, s := range infoSections {
					want[s] = true
				}
				if name == "everything" {
					want[infoRaftSection] = true
				}
			case "default":
				for s := range infoDefault {
					want[s] = true
				}
			default:
				want[name] = true
			}
		}
	}
	c.reply(resp.VerbatimReply("txt", c.srv.info(want)))
}

func (s *Server) info(want map[string]bool) string {
	var b strings.Builder
	section := func(title string, lines []string) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + title + "\r\n")
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\r\n")
		}
	}
	for _, sec := range infoSections {
		if want[sec] {
			section(infoTitles[sec], s.infoSection(sec))
		}
	}
	if want[infoRaftSection] { // after Redis's sections, as a module's would be
		section("Raft", s.infoRaft())
	}
	return b.String()
}

func (s *Server) infoSection(name string) []string {
	switch name {
	case "server":
		return s.infoServer()
	case "clients":
		return s.infoClients()
	case "memory":
		return s.infoMemory()
	case "persistence":
		return s.infoPersistence()
	case "stats":
		return s.infoStats()
	case "replication":
		return s.infoReplication()
	case "cpu":
		return infoCPU()
	case "commandstats":
		return s.commandstatsLines()
	case "errorstats":
		return s.errStats.lines()
	case "latencystats":
		return s.latencystatsLines()
	case "cluster":
		return s.infoCluster()
	case "keyspace":
		return s.infoKeyspace()
	}
	return nil
}

// kv formats INFO lines from alternating names and values.
func kv(pairs ...any) []string {
	out := make([]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, fmt.Sprint(pairs[i], ":", pairs[i+1]))
	}
	return out
}

func (s *Server) infoServer() []string {
	now := time.Now()
	up := now.Sub(s.start)
	exe, _ := os.Executable()
	port := "0"
	if p := paramByName["port"]; p != nil {
		port = s.configGet(p)
	}
	hz := s.configGet(paramByName["hz"])
	h := fnv.New64a()
	h.Write([]byte(s.cfg.Version))
	return kv(
		"redis_version", RedisVersion,
		"redis_git_sha1", "00000000",
		"redis_git_dirty", 0,
		"redis_build_id", fmt.Sprintf("%x", h.Sum64()),
		"redis_mode", "standalone",
		"os", osName(),
		"arch_bits", strconv.IntSize,
		"monotonic_clock", "POSIX clock_gettime",
		"multiplexing_api", pollerName(),
		"atomicvar_api", "c11-builtin",
		"gcc_version", "0.0.0",
		"process_id", os.Getpid(),
		"process_supervised", "no",
		"run_id", s.runID,
		"tcp_port", port,
		"server_time_usec", now.UnixMicro(),
		"uptime_in_seconds", int64(up/time.Second),
		"uptime_in_days", int64(up/(24*time.Hour)),
		"hz", hz,
		"configured_hz", hz,
		"lru_clock", (now.UnixMilli()/1000)&(1<<24-1),
		"executable", exe,
		"config_file", "",
		"io_threads_active", 0,
		"deadbolt_version", s.cfg.Version,
		"go_version", runtime.Version(),
	)
}

// osName is what uname would say: "Linux 6.1.0 x86_64".
func osName() string {
	sys := runtime.GOOS
	switch sys {
	case "linux":
		sys = "Linux"
	case "darwin":
		sys = "Darwin"
	case "freebsd":
		sys = "FreeBSD"
	}
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		if runtime.GOOS == "linux" {
			arch = "aarch64"
		}
	case "386":
		arch = "i686"
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		return sys + " " + strings.TrimSpace(string(rel)) + " " + arch
	}
	return sys + " " + arch
}

// pollerName is the event notification API Go's network poller uses.
func pollerName() string {
	switch runtime.GOOS {
	case "linux", "android":
		return "epoll"
	case "windows":
		return "iocp"
	case "solaris", "illumos":
		return "evport"
	}
	return "kqueue"
}

func (s *Server) infoClients() []string {
	conns := s.clients()
	pubsub := 0
	for _, c := range conns {
		if clientType(c) == "pubsub" {
			pubsub++
		}
	}
	s.mu.Lock()
	maxClients := s.cfg.MaxClients
	s.mu.Unlock()
	return kv(
		"connected_clients", len(conns),
		"cluster_connections", 0,
		"maxclients", maxClients,
		"client_recent_max_input_buffer", 0,
		"client_recent_max_output_buffer", 0,
		"blocked_clients", 0,
		"tracking_clients", 0,
		"pubsub_clients", pubsub,
		"clients_in_timeout_table", 0,
	)
}

// memInfo is the process's memory as INFO memory reports it.
type memInfo struct {
	used, peak, rss  uint64 // heap in use by objects, its peak, resident set
	active, resident uint64 // heap spans in use; heap held from the OS
	system           uint64 // the machine's memory
}

var memPeak atomic.Uint64

func readMem() memInfo {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := memInfo{used: ms.HeapAlloc, active: ms.HeapInuse, resident: ms.HeapSys - ms.HeapReleased}
	for {
		p := memPeak.Load()
		if m.used <= p || memPeak.CompareAndSwap(p, m.used) {
			m.peak = max(p, m.used)
			break
		}
	}
	m.rss = ms.Sys - ms.HeapReleased
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				m.rss = pages * uint64(os.Getpagesize())
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					kb, _ := strconv.ParseUint(f[0], 10, 64)
					m.system = kb * 1024
				}
			}
		}
	}
	return m
}

func (m memInfo) peakPerc() float64 { return ratio(m.used, m.peak) * 100 }
func (m memInfo) fragRatio() float64 {
	return ratio(m.rss, m.used)
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// bytesToHuman formats a byte count as Redis does ("1.09M").
func bytesToHuman(n uint64) string {
	d := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatUint(n, 10) + "B"
	case n < 1<<20:
		return fmt.Sprintf("%.2fK", d/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.2fM", d/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2fG", d/(1<<30))
	case n < 1<<50:
		return fmt.Sprintf("%.2fT", d/(1<<40))
	case n < 1<<60:
		return fmt.Sprintf("%.2fP", d/(1<<50))
	}
	return strconv.FormatUint(n, 10) + "B"
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

func (s *Server) infoMemory() []string {
	m := readMem()
	scripts := 0
	if ss, ok := s.backend.(ScriptStats); ok {
		scripts = ss.ScriptCount()
	}
	maxmem, _ := strconv.ParseUint(s.configGet(paramByName["maxmemory"]), 10, 64)
	var logical int64
	if lm, ok := s.backend.(LogicalMemoryReader); ok {
		logical, _ = lm.LogicalMemory()
	}
	return kv(
		"used_memory", m.used,
		"used_memory_human", bytesToHuman(m.used),
		"used_memory_rss", m.rss,
		"used_memory_rss_human", bytesToHuman(m.rss),
		"used_memory_peak", m.peak,
		"used_memory_peak_human", bytesToHuman(m.peak),
		"used_memory_peak_perc", f2(m.peakPerc())+"%",
		"used_memory_overhead", 0,
		"used_memory_startup", 0,
		"used_memory_dataset", m.used,
		"used_memory_dataset_perc", "100.00%",
		"allocator_allocated", m.used,
		"allocator_active", m.active,
		"allocator_resident", m.resident,
		"total_system_memory", m.system,
		"total_system_memory_human", bytesToHuman(m.system),
		"used_memory_lua", 0,
		"used_memory_vm_eval", 0,
		"used_memory_lua_human", "0B",
		"used_memory_scripts_eval", 0,
		"number_of_cached_scripts", scripts,
		"number_of_functions", 0,
		"number_of_libraries", 0,
		"used_memory_vm_functions", 0,
		"used_memory_vm_total", 0,
		"used_memory_vm_total_human", "0B",
		"used_memory_functions", 0,
		"used_memory_scripts", 0,
		"used_memory_scripts_human", "0B",
		"maxmemory", maxmem,
		"maxmemory_human", bytesToHuman(maxmem),
		"maxmemory_policy", s.configGet(paramByName["maxmemory-policy"]),
		"used_memory_logical", logical,
		"used_memory_logical_human", bytesToHuman(uint64(logical)),
		"allocator_frag_ratio", f2(ratio(m.active, m.used)),
		"allocator_frag_bytes", int64(m.active)-int64(m.used),
		"allocator_rss_ratio", f2(ratio(m.resident, m.active)),
		"allocator_rss_bytes", int64(m.resident)-int64(m.active),
		"rss_overhead_ratio", f2(ratio(m.rss, m.resident)),
		"rss_overhead_bytes", int64(m.rss)-int64(m.resident),
		"mem_fragmentation_ratio", f2(m.fragRatio()),
		"mem_fragmentation_bytes", int64(m.rss)-int64(m.used),
		"mem_not_counted_for_evict", 0,
		"mem_replication_backlog", 0,
		"mem_total_replication_buffers", 0,
		"mem_clients_slaves", 0,
		"mem_clients_normal", 0,
		"mem_cluster_links", 0,
		"mem_aof_buffer", 0,
		"mem_allocator", "go",
		"active_defrag_running", 0,
		"lazyfree_pending_objects", 0,
		"lazyfreed_objects", 0,
	)
}

// PersistenceProvider is an InfoProvider that adds fields to INFO's
// "# Persistence" section (a node's data directory: its free space, and
// whether writes are refused for want of it).
type PersistenceProvider interface {
	Persistence() []string
}

func (s *Server) infoPersistence() []string {
	lines := s.infoPersistenceBase()
	if p, ok := s.cfg.Info.(PersistenceProvider); ok {
		lines = append(lines, p.Persistence()...)
	}
	return lines
}

func (s *Server) infoPersistenceBase() []string {
	return kv(
		"loading", 0,
		"async_loading", 0,
		"current_cow_peak", 0,
		"current_cow_size", 0,
		"current_cow_size_age", 0,
		"current_fork_perc", "0.00",
		"current_save_keys_processed", 0,
		"current_save_keys_total", 0,
		"rdb_changes_since_last_save", s.adm.dirty.Load(),
		"rdb_bgsave_in_progress", 0,
		"rdb_last_save_time", s.adm.lastSave.Load(),
		"rdb_last_bgsave_status", "ok",
		"rdb_last_bgsave_time_sec", -1,
		"rdb_current_bgsave_time_sec", -1,
		"rdb_saves", 0,
		"rdb_last_cow_size", 0,
		"rdb_last_load_keys_expired", 0,
		"rdb_last_load_keys_loaded", 0,
		"aof_enabled", 0,
		"aof_rewrite_in_progress", 0,
		"aof_rewrite_scheduled", 0,
		"aof_last_rewrite_time_sec", -1,
		"aof_current_rewrite_time_sec", -1,
		"aof_last_bgrewrite_status", "ok",
		"aof_rewrites", 0,
		"aof_rewrites_consecutive_failures", 0,
		"aof_last_write_status", "ok",
		"aof_last_cow_size", 0,
		"module_fork_in_progress", 0,
		"module_fork_last_cow_size", 0,
	)
}

func (s *Server) infoStats() []string {
	h := s.hub
	h.mu.RLock()
	channels, patterns, shard := len(h.subs[subChannel]), len(h.subs[subPattern]), len(h.subs[subShard])
	h.mu.RUnlock()
	cmds := s.stats.commands.Load()
	return kv(
		"total_connections_received", s.stats.connections.Load(),
		"total_commands_processed", cmds,
		"instantaneous_ops_per_sec", s.ops.sample(time.Now(), cmds),
		"total_net_input_bytes", 0,
		"total_net_output_bytes", 0,
		"total_net_repl_input_bytes", 0,
		"total_net_repl_output_bytes", 0,
		"instantaneous_input_kbps", "0.00",
		"instantaneous_output_kbps", "0.00",
		"instantaneous_input_repl_kbps", "0.00",
		"instantaneous_output_repl_kbps", "0.00",
		"rejected_connections", s.stats.rejected.Load(),
		"sync_full", 0,
		"sync_partial_ok", 0,
		"sync_partial_err", 0,
		"expired_keys", 0,
		"expired_stale_perc", "0.00",
		"expired_time_cap_reached_count", 0,
		"expire_cycle_cpu_milliseconds", 0,
		"evicted_keys", 0,
		"evicted_clients", 0,
		"total_eviction_exceeded_time", 0,
		"current_eviction_exceeded_time", 0,
		"keyspace_hits", 0,
		"keyspace_misses", 0,
		"pubsub_channels", channels,
		"pubsub_patterns", patterns,
		"pubsubshard_channels", shard,
		"latest_fork_usec", 0,
		"total_forks", 0,
		"migrate_cached_sockets", 0,
		"slave_expires_tracked_keys", 0,
		"active_defrag_hits", 0,
		"active_defrag_misses", 0,
		"active_defrag_key_hits", 0,
		"active_defrag_key_misses", 0,
		"total_active_defrag_time", 0,
		"current_active_defrag_time", 0,
		"tracking_total_keys", 0,
		"tracking_total_items", 0,
		"tracking_total_prefixes", 0,
		"unexpected_error_replies", 0,
		"total_error_replies", s.errStats.total.Load(),
		"dump_payload_sanitizations", 0,
		"total_reads_processed", cmds,
		"total_writes_processed", cmds,
		"io_threaded_reads_processed", 0,
		"io_threaded_writes_processed", 0,
		"reply_buffer_shrinks", 0,
		"reply_buffer_expands", 0,
	)
}

func (s *Server) infoReplication() []string {
	if s.cfg.Info != nil {
		return s.cfg.Info.Replication()
	}
	return kv(
		"role", "master",
		"connected_slaves", 0,
		"master_failover_state", "no-failover",
		"master_replid", s.adm.replID,
		"master_replid2", strings.Repeat("0", 40),
		"master_repl_offset", 0,
		"second_repl_offset", -1,
		"repl_backlog_active", 0,
		"repl_backlog_size", 1048576,
		"repl_backlog_first_byte_offset", 0,
		"repl_backlog_histlen", 0,
	)
}

// infoCPU reads the process's CPU time from /proc (zero elsewhere).
func infoCPU() []string {
	var sys, user float64
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		// Fields after the command name, which is in parentheses.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 12 {
				const ticks = 100 // USER_HZ
				u, _ := strconv.ParseFloat(f[11], 64)
				s, _ := strconv.ParseFloat(f[12], 64)
				user, sys = u/ticks, s/ticks
			}
		}
	}
	f6 := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	return kv(
		"used_cpu_sys", f6(sys),
		"used_cpu_user", f6(user),
		"used_cpu_sys_children", f6(0),
		"used_cpu_user_children", f6(0),
		"used_cpu_sys_main_thread", f6(sys),
		"used_cpu_user_main_thread", f6(user),
	)
}

func (s *Server) infoKeyspace() []string {
	ks, ok := s.backend.(KeyspaceStats)
	if !ok {
		return nil
	}
	var out []string
	for db := range fsm.NumDBs {
		keys, expires := ks.KeyspaceStats(db)
		if keys > 0 {
			out = append(out, fmt.Sprintf("db%d:keys=%d,expires=%d,avg_ttl=0", db, keys, expires))
		}
	}
	return out
}

// ---- statistics ----

// errorStats counts error replies by their first word, for INFO
// errorstats. Scripts can make up error prefixes, so, as Redis does, only
// the first 128 distinct ones are tracked.
type errorStats struct {
	total atomic.Int64
	mu    sync.Mutex
	count map[string]int64
}

const maxErrorStats = 128

func (es *errorStats) record(prefix string) {
	es.total.Add(1)
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.count == nil {
		es.count = make(map[string]int64)
	}
	if _, ok := es.count[prefix]; ok || len(es.count) < maxErrorStats {
		es.count[prefix]++
	}
}

func (es *errorStats) lines() []string {
	es.mu.Lock()
	defer es.mu.Unlock()
	out := make([]string, 0, len(es.count))
	for p, n := range es.count {
		out = append(out, "errorstat_"+p+":count="+strconv.FormatInt(n, 10))
	}
	slices.Sort(out)
	return out
}

func (es *errorStats) reset() {
	es.total.Store(0)
	es.mu.Lock()
	es.count = nil
	es.mu.Unlock()
}

// opsSampler measures instantaneous_ops_per_sec between INFO calls at
// least 100 ms apart.
type opsSampler struct {
	mu   sync.Mutex
	t    time.Time
	n    int64
	rate int64
}

func (o *opsSampler) sample(now time.Time, total int64) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.t.IsZero() {
		o.t, o.n = now, total
		return 0
	}
	if dt := now.Sub(o.t); dt >= 100*time.Millisecond {
		o.rate = (total - o.n) * int64(time.Second) / int64(dt)
		o.t, o.n = now, total
	}
	return o.rate
}

// resetStats is CONFIG RESETSTAT.
func (s *Server) resetStats() {
	s.stats.connections.Store(0)
	s.stats.rejected.Store(0)
	s.stats.commands.Store(0)
	s.cmdStats.reset()
	s.errStats.reset()
	s.ops.mu.Lock()
	s.ops.t, s.ops.rate = time.Time{}, 0
	s.ops.mu.Unlock()
}

// globMatch matches a lower-case glob pattern against a name.
func globMatch(pattern, name string) bool {
	return glob.Match([]byte(pattern), []byte(name))
}

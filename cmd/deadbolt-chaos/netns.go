package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The lab: one network namespace per host plus one for the harness, joined
// by a bridge that lives inside the harness's namespace. Nothing is added
// to the namespace the harness was started in, and the lab has no route
// out of itself: its addresses (10.213.0.0/24) exist only inside these
// namespaces. A partition is a pair of blackhole routes, one in each
// host's namespace, so it cuts everything between two hosts: Raft,
// forwarding and membership calls alike. Clients (in the harness's
// namespace) always reach every host, as in Jepsen.
type lab struct {
	prefix string // namespace names start with it: dbc<pid>
	hosts  int

	mu   sync.Mutex
	cuts map[[2]int]bool // directed pairs whose traffic is dropped
}

const labSubnet = "10.213.0"

func (l *lab) labNS() string       { return l.prefix }
func (l *lab) hostNS(i int) string { return fmt.Sprintf("%sh%d", l.prefix, i+1) }
func hostIP(i int) string          { return fmt.Sprintf("%s.%d", labSubnet, 11+i) }

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setup creates the namespaces, the bridge and one veth pair per host.
func (l *lab) setup() error {
	lab := l.labNS()
	steps := [][]string{
		{"netns", "add", lab},
		{"-n", lab, "link", "set", "lo", "up"},
		{"-n", lab, "link", "add", "br0", "type", "bridge"},
		{"-n", lab, "addr", "add", labSubnet + ".1/24", "dev", "br0"},
		{"-n", lab, "link", "set", "br0", "up"},
	}
	for i := 0; i < l.hosts; i++ {
		ns, v := l.hostNS(i), fmt.Sprintf("v%d", i+1)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", v, "netns", lab, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", lab, "link", "set", v, "master", "br0"},
			[]string{"-n", lab, "link", "set", v, "up"},
			[]string{"-n", ns, "addr", "add", hostIP(i) + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			l.teardown()
			return err
		}
	}
	l.cuts = map[[2]int]bool{}
	return nil
}

// teardown deletes the namespaces (their veths go with them).
func (l *lab) teardown() {
	for i := 0; i < l.hosts; i++ {
		exec.Command("ip", "netns", "del", l.hostNS(i)).Run()
	}
	exec.Command("ip", "netns", "del", l.labNS()).Run()
}

// removeStaleLabs deletes lab namespaces left by harness runs that died.
func removeStaleLabs() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	re := regexp.MustCompile(`^dbc(\d+)(h\d+)?$`)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := re.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue // alive
		}
		exec.Command("ip", "netns", "del", f[0]).Run()
	}
}

// setCuts makes the set of cut (undirected) host pairs exactly want.
func (l *lab) setCuts(want map[[2]int]bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []string
	for c := range l.cuts {
		if !want[c] {
			if err := ipCmd("-n", l.hostNS(c[0]), "route", "del", "blackhole", hostIP(c[1])+"/32"); err != nil {
				errs = append(errs, err.Error())
			}
			delete(l.cuts, c)
		}
	}
	for c := range want {
		if !l.cuts[c] {
			if err := ipCmd("-n", l.hostNS(c[0]), "route", "add", "blackhole", hostIP(c[1])+"/32"); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			l.cuts[c] = true
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("partition: %s", strings.Join(errs, "; "))
	}
	return nil
}

// partition cuts every pair of hosts that are in different groups.
func (l *lab) partition(groups [][]int) error {
	group := map[int]int{}
	for g, hs := range groups {
		for _, h := range hs {
			group[h] = g
		}
	}
	want := map[[2]int]bool{}
	for a := 0; a < l.hosts; a++ {
		for b := 0; b < l.hosts; b++ {
			ga, oka := group[a]
			gb, okb := group[b]
			if a != b && oka && okb && ga != gb {
				want[[2]int{a, b}] = true
			}
		}
	}
	return l.setCuts(want)
}

// cutLinks cuts the given undirected pairs and nothing else.
func (l *lab) cutLinks(pairs [][2]int) error {
	want := map[[2]int]bool{}
	for _, p := range pairs {
		want[p] = true
		want[[2]int{p[1], p[0]}] = true
	}
	return l.setCuts(want)
}

func (l *lab) heal() error { return l.setCuts(map[[2]int]bool{}) }

// describe lists the cut pairs, for the report.
func (l *lab) describe(name func(int) string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []string
	for c := range l.cuts {
		if c[0] < c[1] {
			s = append(s, name(c[0])+"-x-"+name(c[1]))
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

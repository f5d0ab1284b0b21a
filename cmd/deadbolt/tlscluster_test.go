package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/internal/testcerts"
)

func TestRunTLSClusterFlags(t *testing.T) {
	certs := testcerts.Make(t)
	var out, errb bytes.Buffer
	tlsFlags := []string{"--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key, "--tls-ca-cert-file", certs.CA}
	member := []string{"--id", "n1", "--raft-addr", "127.0.0.1:0", "--peers", "n1=127.0.0.1:1", "--addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		args []string
		want string // in the error
	}{
		{append(append([]string{"--tls-cluster"}, tlsFlags...), "--addr", "127.0.0.1:0"), "--raft-addr or --data-dir"},
		{append(member, "--tls-cluster-cert-file", certs.Node2Cert, "--tls-cluster"), "go together"},
		{append(member, "--tls-cluster-cert-file", certs.Node2Cert, "--tls-cluster-key-file", certs.Node2Key), "need --tls-cluster"},
		{append(member, "--tls-cluster"), "tls-cert-file"},
		{append(member, "--tls-cluster", "--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key), "tls-ca-cert-file"},
		{append(append(member, "--tls-cluster"), "--tls-cert-file", certs.Cert, "--tls-key-file", certs.KeyPKCS8, "--tls-ca-cert-file", certs.CA), "tls-key-file-pass"},
	} {
		err := run(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q): %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	// A Raft address others can reach needs no --insecure-cluster with
	// --tls-cluster: what fails is listening on a TEST-NET-1 address that
	// is not this machine's.
	args := append([]string{"--id", "n1", "--raft-addr", "192.0.2.1:7000", "--peers", "n1=192.0.2.1:7000", "--addr", "127.0.0.1:0", "--tls-cluster"}, tlsFlags...)
	if err := run(context.Background(), args, &out, &errb); err == nil || strings.Contains(err.Error(), "--insecure-cluster") {
		t.Fatalf("--tls-cluster on a reachable Raft address: %v", err)
	}
}

// Three real processes on 127.0.0.1, 127.0.0.2 and 127.0.0.3 speak mutual
// TLS to each other (--tls-cluster; the second one with a member
// certificate of its own): they elect a leader, a write through a follower
// reaches every node, SIGHUP reloads the certificates, and a fourth node
// joins through a member's TLS client address. No member refuses another,
// nor counts a check that its Raft port is open as a refusal.
func TestProcessTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	certs := testcerts.Make(t)
	bin := buildBinary(t)
	tlsFlags := func(cert, key string) []string {
		return []string{"--tls-cluster", "--tls-cert-file", certs.Cert, "--tls-key-file", certs.KeyPKCS8,
			"--tls-key-file-pass", certs.Pass, "--tls-ca-cert-file", certs.CA,
			"--tls-cluster-cert-file", cert, "--tls-cluster-key-file", key}
	}
	procs := make([]*proc, 3)
	tlsAddrs := make([]string, 3)
	var peers []string
	for i := range procs {
		host := fmt.Sprintf("127.0.0.%d", i+1)
		tlsAddrs[i] = freeAddrOn(t, host)
		cert, key := certs.Cert, certs.Key
		if i == 1 {
			cert, key = certs.Node2Cert, certs.Node2Key
		}
		procs[i] = &proc{id: fmt.Sprintf("t%d", i+1), addr: freeAddrOn(t, host), raft: freeAddrOn(t, host), dir: t.TempDir(),
			extra: append(tlsFlags(cert, key), "--tls-addr", tlsAddrs[i])}
		peers = append(peers, procs[i].id+"="+procs[i].raft)
	}
	all := procs
	t.Cleanup(func() {
		for _, p := range all {
			p.kill()
		}
		if t.Failed() {
			for _, p := range all {
				b, _ := os.ReadFile(filepath.Join(p.dir, "log"))
				t.Logf("%s log:\n%s", p.id, b)
			}
		}
	})
	for _, p := range procs {
		p.start(t, bin, strings.Join(peers, ","))
	}
	ctx := context.Background()
	waitLeader := func() int {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if l, err := leaderOf(ctx, procs); err == nil {
				return l
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no leader within 30s")
		return -1
	}
	l := waitLeader()
	f := (l + 1) % 3
	do := func(p *proc, args ...any) (any, error) {
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
		defer c.Close()
		return c.Do(ctx, args...).Result()
	}
	if _, err := do(procs[f], "SET", "k", "through a follower"); err != nil {
		t.Fatalf("SET through %s: %v", procs[f].id, err)
	}
	for _, p := range procs {
		if v, err := do(p, "GET", "k"); err != nil || v != "through a follower" {
			t.Fatalf("GET on %s: %v %v", p.id, v, err)
		}
	}

	// A check that a port is open (as a follower's fail-fast probe of its
	// leader, failfast.go, or a load balancer's) is no failed handshake.
	for _, p := range procs {
		if c, err := net.Dial("tcp", p.raft); err == nil {
			c.Close()
		}
	}

	procs[f].cmd.Process.Signal(syscall.SIGHUP)
	logOf := func(p *proc) string {
		b, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		return string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logOf(procs[f]), "TLS certificates reloaded") {
		if time.Now().After(deadline) {
			t.Fatal("no reload after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A fourth member, on 127.0.0.1, joins through a follower's TLS port.
	p4 := &proc{id: "t4", addr: freeAddr(t), raft: freeAddr(t), dir: t.TempDir(),
		extra: append(tlsFlags(certs.Node2Cert, certs.Node2Key), "--join", tlsAddrs[f])}
	all = append(all, p4)
	p4.start(t, bin, "")
	deadline = time.Now().Add(30 * time.Second)
	for {
		v, err := do(p4, "GET", "k")
		if err == nil && v == "through a follower" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET on the joined node: %v %v", v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m, err := do(procs[l], "RAFT", "MEMBERS"); err != nil || len(m.([]any)) != 4 {
		t.Fatalf("RAFT MEMBERS: %v %v", m, err)
	}
	for _, p := range all {
		log := logOf(p)
		if strings.Contains(log, "failed authentication") {
			t.Errorf("%s refused a member:\n%s", p.id, log)
		}
		if !strings.Contains(log, "members_tls=true") {
			t.Errorf("%s does not say its members speak TLS", p.id)
		}
	}
}

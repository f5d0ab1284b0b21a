package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/internal/testcerts"
)

// deadbolt backup writes a backup file; a node started with --restore
// FILE on an empty data directory serves its locks; --restore over a data
// directory with state is refused, naming it.
func TestRunBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "deadbolt.backup")
	addr := freeAddr(t)
	serve := func(args ...string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var out, errb lockedBuffer
		go func() { done <- run(ctx, args, &out, &errb) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run %q: %v\n%s", args, err, errb.String())
			}
		}
	}
	stop := serve("--id", "n1", "--addr", addr, "--raft-addr", freeAddr(t), "--data-dir", filepath.Join(dir, "old"), "--requirepass", "pw")
	dialWhenUp(t, addr).Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc := redis.NewClient(&redis.Options{Addr: addr, Password: "pw", MaxRetries: -1})
	defer rc.Close()
	for rc.Set(ctx, "lock:a", "owner-1", 0).Err() != nil && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // until the lone node leads
	}
	if err := rc.Set(ctx, "lock:b", "owner-2", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	var out, errb lockedBuffer
	if err := run(ctx, []string{"backup", "--addr", addr, "--out", file, "--pass", "wrong"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "AUTH") {
		t.Errorf("a wrong password: %v", err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a failed backup left a file")
	}
	t.Setenv("DEADBOLT_PASSWORD", "pw")
	// An --out that cannot be written is named as given, not by the
	// temporary file beside it.
	nodir := filepath.Join(dir, "no-such-dir", "x.backup")
	if err := run(ctx, []string{"backup", "--addr", addr, "--out", nodir}, &out, &errb); err == nil || !strings.Contains(err.Error(), "--out "+nodir+": ") {
		t.Errorf("an --out in a missing directory: %v", err)
	}
	if err := run(ctx, []string{"backup", "--addr", addr, "--out", file}, &out, &errb); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if !strings.Contains(out.String(), "written to "+file) {
		t.Errorf("backup said %q", out.String())
	}
	stop()

	addr2, newDir := freeAddr(t), filepath.Join(dir, "new")
	args := []string{"--id", "m1", "--addr", addr2, "--raft-addr", freeAddr(t), "--data-dir", newDir, "--requirepass", "pw", "--restore", file}
	stop = serve(args...)
	dialWhenUp(t, addr2).Close()
	rc2 := redis.NewClient(&redis.Options{Addr: addr2, Password: "pw", MaxRetries: -1})
	defer rc2.Close()
	var got string
	for ctx.Err() == nil {
		if got, _ = rc2.Get(ctx, "lock:a").Result(); got != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != "owner-1" || rc2.Get(ctx, "lock:b").Val() != "owner-2" {
		t.Errorf("after the restore: lock:a %q, lock:b %q", got, rc2.Get(ctx, "lock:b").Val())
	}
	if ttl := rc2.PTTL(ctx, "lock:b").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("lock:b has %v left", ttl)
	}
	// Another backup, of the new node.
	other := filepath.Join(dir, "other.backup")
	if err := run(ctx, []string{"backup", "--addr", addr2, "--out", other}, &out, &errb); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if err := rc2.Set(ctx, "after", "restore", 0).Err(); err != nil {
		t.Fatal(err)
	}
	stop()
	// Restarted with the same --restore (left in its configuration), the
	// node starts from its own state.
	stop = serve(args...)
	for ctx.Err() == nil && rc2.Get(ctx, "after").Val() != "restore" {
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Error("restarted with the same --restore, the node lost what it held")
	}
	stop()
	err := run(ctx, append(args[:len(args)-1:len(args)-1], other), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), newDir) || !strings.Contains(err.Error(), "empty data directory") {
		t.Errorf("--restore of another backup over state: %v", err)
	}
	os.WriteFile(file, []byte("DBOLTSNP garbage"), 0o600)
	err = run(ctx, []string{"--addr", freeAddr(t), "--data-dir", filepath.Join(dir, "third"), "--restore", file}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("--restore of a bad file: %v", err)
	}
}

// The way a new three-node cluster is started from a backup: every node
// with the same --peers and the same --restore FILE. Each starts from the
// backup's bytes, and each serves the locks, with the lease they had.
func TestRunRestoreThreeNodes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "deadbolt.backup")
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sctx, stopSource := context.WithCancel(ctx)
	done := make(chan error, 1)
	var out, errb lockedBuffer
	go func() {
		done <- run(sctx, []string{"--id", "old", "--addr", addr, "--raft-addr", freeAddr(t), "--data-dir", filepath.Join(dir, "old")}, &out, &errb)
	}()
	dialWhenUp(t, addr).Close()
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	for rc.Set(ctx, "lock:a", "owner-1", time.Minute).Err() != nil && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if err := run(ctx, []string{"backup", "--addr", addr, "--out", file}, &out, &errb); err != nil {
		t.Fatalf("backup: %v", err)
	}
	leaseAtBackup := rc.PTTL(ctx, "lock:a").Val()
	stopSource()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	backup, _ := os.ReadFile(file)
	// A new cluster starts from the backup less the old cluster's id: it
	// makes its own.
	sf := fsm.New(fsm.Options{})
	defer sf.Close()
	if err := sf.Restore(bytes.NewReader(backup)); err != nil || sf.ClusterID() == "" {
		t.Fatalf("the backup: cluster id %q, %v", sf.ClusterID(), err)
	}
	sf.ForgetClusterID()
	var sb bytes.Buffer
	if err := sf.Snapshot(&sb); err != nil {
		t.Fatal(err)
	}
	seed := sb.Bytes()

	var addrs, rafts, peers []string
	for i := range 3 {
		addrs, rafts = append(addrs, freeAddr(t)), append(rafts, freeAddr(t))
		peers = append(peers, fmt.Sprintf("m%d=%s", i+1, rafts[i]))
	}
	nctx, stopNew := context.WithCancel(ctx)
	dones := make([]chan error, 3)
	started := time.Now()
	for i := range 3 {
		dones[i] = make(chan error, 1)
		args := []string{"--id", fmt.Sprintf("m%d", i+1), "--addr", addrs[i], "--raft-addr", rafts[i],
			"--data-dir", filepath.Join(dir, fmt.Sprint("m", i+1)), "--peers", strings.Join(peers, ","), "--restore", file}
		go func() { dones[i] <- run(nctx, args, io.Discard, io.Discard) }()
	}
	defer func() {
		stopNew()
		for _, d := range dones {
			if err := <-d; err != nil {
				t.Logf("run: %v", err) // a leader's hand-over to a member stopping too may fail
			}
		}
	}()
	for i := range 3 {
		dialWhenUp(t, addrs[i]).Close()
		c := redis.NewClient(&redis.Options{Addr: addrs[i], MaxRetries: -1})
		defer c.Close()
		var got string
		for ctx.Err() == nil {
			if got, _ = c.Get(ctx, "lock:a").Result(); got != "" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		lease := c.PTTL(ctx, "lock:a").Val()
		if got != "owner-1" || lease > leaseAtBackup+time.Second || lease < leaseAtBackup-time.Since(started)-time.Second {
			t.Errorf("m%d: lock:a held by %q with %v left; %v at the backup", i+1, got, lease, leaseAtBackup)
		}
		st, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, fmt.Sprint("m", i+1)), 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		metas, err := st.List()
		if err != nil || len(metas) != 1 || metas[0].Index != 1 || len(metas[0].Configuration.Servers) != 3 {
			t.Fatalf("m%d's snapshots: %+v, %v", i+1, metas, err)
		}
		_, r, err := st.Open(metas[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if !bytes.Equal(b, seed) {
			t.Errorf("m%d started from %d bytes, not the backup's %d without its cluster id", i+1, len(b), len(seed))
		}
	}
}

// deadbolt backup over TLS, with a client certificate the server asks for.
func TestRunBackupTLS(t *testing.T) {
	certs := testcerts.Make(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	var out, errb lockedBuffer
	go func() {
		done <- run(sctx, []string{"--addr", "", "--tls-addr", addr, "--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key,
			"--tls-ca-cert-file", certs.CA, "--data-dir", filepath.Join(dir, "d"), "--id", "n1"}, &out, &errb)
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	dialWhenUp(t, addr).Close()
	file := filepath.Join(dir, "b")
	tlsArgs := []string{"backup", "--addr", addr, "--out", file, "--tls", "--cacert", certs.CA}
	if err := run(ctx, tlsArgs, &out, &errb); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a backup without the client certificate the server asks for: %v", err)
	}
	var err error
	for {
		// Until the lone node leads.
		if err = run(ctx, append(tlsArgs, "--cert", certs.ClientCert, "--key", certs.ClientKey), &out, &errb); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("backup over TLS: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.HasPrefix(b, []byte("DBOLTSNP")) {
		t.Fatalf("the backup file: %v", err)
	}
}

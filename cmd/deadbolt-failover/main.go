// Command deadbolt-failover measures failover: it runs a three-node
// deadbolt cluster of real processes on loopback, kills the leader with
// SIGKILL again and again, and reports how long it took from each kill to
// the first lock granted by the new leader (p50 and max).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "deadbolt-failover:", err)
		os.Exit(1)
	}
}

type proc struct {
	id, addr, raft, dir string
	cmd                 *exec.Cmd
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (p *proc) start(bin, peers string, extra []string, logw io.Writer) error {
	args := append([]string{"--id", p.id, "--addr", p.addr, "--raft-addr", p.raft,
		"--data-dir", filepath.Join(p.dir, "data"), "--peers", peers, "--log-level", "warn"}, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logw, logw
	return p.cmd.Start()
}

func (p *proc) kill() {
	if p.cmd != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		p.cmd = nil
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadbolt-failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/deadbolt", "deadbolt binary")
	kills := fs.Int("kills", 20, "how many leader kills")
	extra := fs.String("node-flags", "", "extra flags for every node, space separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "deadbolt-failover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	procs := make([]*proc, 3)
	var peers []string
	for i := range procs {
		a, err := freeAddr()
		if err != nil {
			return err
		}
		r, err := freeAddr()
		if err != nil {
			return err
		}
		procs[i] = &proc{id: fmt.Sprintf("f%d", i+1), addr: a, raft: r, dir: filepath.Join(dir, fmt.Sprint(i))}
		peers = append(peers, procs[i].id+"="+r)
	}
	peerList := strings.Join(peers, ",")
	var extraArgs []string
	if *extra != "" {
		extraArgs = strings.Fields(*extra)
	}
	for _, p := range procs {
		if err := p.start(*bin, peerList, extraArgs, stderr); err != nil {
			return err
		}
	}
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()

	var took []time.Duration
	for k := 0; k < *kills && ctx.Err() == nil; k++ {
		l, err := waitLeader(ctx, procs, 30*time.Second)
		if err != nil {
			return err
		}
		// Every node must be caught up and know the leader before the kill.
		time.Sleep(1500 * time.Millisecond)
		victim := procs[l]
		start := time.Now()
		victim.kill()
		key := fmt.Sprintf("failover-lock-%d", k)
		if err := firstGrant(ctx, procs, key, 30*time.Second); err != nil {
			return fmt.Errorf("kill %d: %w", k+1, err)
		}
		d := time.Since(start)
		took = append(took, d)
		fmt.Fprintf(stdout, "kill %2d: %s killed, first lock granted after %v\n", k+1, victim.id, d.Round(time.Millisecond))
		if err := victim.start(*bin, peerList, extraArgs, stderr); err != nil {
			return err
		}
	}
	if len(took) == 0 {
		return errors.New("no kill measured")
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	fmt.Fprintf(stdout, "failover over %d leader kills: p50 %v, max %v\n", len(took),
		took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	return nil
}

// waitLeader asks the running nodes who leads until one answers.
func waitLeader(ctx context.Context, procs []*proc, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, p := range procs {
			if p.cmd == nil {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			r, err := c.Do(ctx, "RAFT", "LEADER").StringSlice()
			c.Close()
			if err != nil || len(r) != 2 {
				continue
			}
			for i, q := range procs {
				if q.id == r[0] && q.cmd != nil {
					return i, nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1, errors.New("no leader")
}

// firstGrant tries SET NX PX through every surviving node until one
// succeeds; a granted lock means a new leader committed it.
func firstGrant(ctx context.Context, procs []*proc, key string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var clients []*redis.Client
	for _, p := range procs {
		if p.cmd != nil {
			clients = append(clients, redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1,
				DialTimeout: 100 * time.Millisecond, ReadTimeout: 300 * time.Millisecond}))
		}
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, c := range clients {
			_, err := c.SetNX(ctx, key, "owner", 30*time.Second).Result()
			// Held already: an earlier attempt whose answer timed out was
			// committed; either way the new leader grants locks.
			if err == nil {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("no lock granted in time")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Persistence settings for startRedis.
var (
	redisNoPersistence = []string{"--save", "", "--appendonly", "no"}
	redisFsyncAlways   = []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
)

// startRedis starts redis-server on a free loopback port with the given
// persistence arguments, in a temporary directory, and waits until it
// answers. stop kills it and removes the directory.
func startRedis(ctx context.Context, bin string, persistence []string) (addr string, stop func(), err error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", nil, fmt.Errorf("redis-server: %w (install it, or pass -redis-addr)", err)
	}
	for attempt := 0; ; attempt++ {
		addr, stop, err = startRedisOnce(ctx, path, persistence)
		if err == nil || attempt == 4 {
			return addr, stop, err
		}
	}
}

// startRedisOnce makes one attempt: the port is found free and closed
// again before Redis binds it, so another process may take it first.
func startRedisOnce(ctx context.Context, bin string, persistence []string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "deadbolt-bench-redis-")
	if err != nil {
		return "", nil, err
	}
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port)}, persistence...)
	cmd := exec.Command(bin, append(args, "--daemonize", "no", "--dir", dir, "--logfile", "")...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
		os.RemoveAll(dir)
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			stop()
			return "", nil, fmt.Errorf("redis-server on port %d exited: %s", port, out.String())
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := rc.Info(pctx, "server").Result()
		cancel()
		if err == nil {
			if !strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)+"\r\n") {
				stop()
				return "", nil, fmt.Errorf("port %d was taken by another server", port)
			}
			return addr, stop, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			stop()
			return "", nil, errors.Join(fmt.Errorf("redis-server on %s did not answer", addr), err, ctx.Err())
		}
		<-time.After(20 * time.Millisecond)
	}
}

// redisVersion asks a server for its redis_version.
func redisVersion(ctx context.Context, addr string) (string, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	info, err := rc.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("no redis_version in INFO")
}

package deadbolt

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	dbclient "github.com/deadbolt/deadbolt/client"
	"github.com/deadbolt/deadbolt/internal/testcerts"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// withTLSOnly serves clients over TLS only (no plain port, so Sentinel and
// Cluster discovery name the TLS addresses), Sentinel over TLS too, and
// makes the members speak mutual TLS.
func withTLSOnly(s *testcerts.Set) ClusterOption {
	tlsCluster := withTLSCluster(s)
	return func(i int, c *Config) {
		tlsCluster(i, c)
		c.Addr = ""
		c.TLSSentinelAddr = "127.0.0.1:0"
	}
}

// The lock clients over TLS against a three-node --tls-cluster, in every
// mode go-redis has: straight to the leader, through a follower, Sentinel
// and Cluster; each takes and releases locks with the project's
// Redisson-family client, redsync and redislock.
func TestTLSClientsEveryMode(t *testing.T) {
	certs := testcerts.Make(t)
	c := RunClusterT(t, 3, withTLSOnly(certs))
	ctx := context.Background()
	l := c.WaitLeader()
	f := c.Followers()[0]
	cfg := func() *tls.Config { return certs.ClientConfig(t, certs.ClientCert, certs.ClientKey) }
	var sentinels []string
	for _, n := range c.Nodes {
		sentinels = append(sentinels, n.TLSSentinelAddr())
	}
	modes := []struct {
		name string
		rdb  func() redis.UniversalClient
	}{
		{"leader", func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: c.Addr(l), TLSConfig: cfg()})
		}},
		{"follower", func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: c.Addr(f), TLSConfig: cfg()})
		}},
		{"sentinel", func() redis.UniversalClient {
			return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinels, TLSConfig: cfg()})
		}},
		{"cluster", func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Addr(f)}, TLSConfig: cfg()})
		}},
	}
	// redis-py over TLS with its own Lock: leader, follower, Sentinel and
	// Cluster.
	t.Run("redis-py", func(t *testing.T) {
		lh, lp, _ := strings.Cut(c.Addr(l), ":")
		fh, fp, _ := strings.Cut(c.Addr(f), ":")
		sh, sp, _ := strings.Cut(sentinels[f], ":")
		script := fmt.Sprintf(`import redis, redis.sentinel, redis.cluster
tls = dict(ssl=True, ssl_ca_certs=%q, ssl_certfile=%q, ssl_keyfile=%q)
def lock(r, name):
    l = r.lock(name, timeout=30)
    assert l.acquire(blocking=False)
    assert r.get(name) == l.local.token
    l.release()
    assert r.get(name) is None
lock(redis.Redis(host=%q, port=%s, **tls), "tls:py:leader")
lock(redis.Redis(host=%q, port=%s, **tls), "tls:py:follower")
s = redis.sentinel.Sentinel([(%q, %s)], sentinel_kwargs=tls, **tls)
lock(s.master_for("mymaster"), "tls:py:sentinel")
lock(redis.cluster.RedisCluster(host=%q, port=%s, **tls), "tls:py:cluster")
print("ok")`, certs.CA, certs.ClientCert, certs.ClientKey, lh, lp, fh, fp, sh, sp, fh, fp)
		py := "python3"
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			py = "/usr/bin/python3" // Debian's, with its python3-redis
		}
		out, err := exec.Command(py, "-c", script).CombinedOutput()
		if err != nil {
			if os.Getenv("CI") != "true" && strings.Contains(string(out), "No module named") {
				t.Skipf("redis-py is not installed: %s", out)
			}
			t.Fatalf("redis-py over TLS: %v\n%s", err, out)
		}
	})
	// redis-cli --tls with a client certificate: to the leader, through a
	// follower, and in cluster mode (-c).
	t.Run("redis-cli", func(t *testing.T) {
		if _, err := exec.LookPath("redis-cli"); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skip("redis-cli is not installed (make deps)")
			}
			t.Fatal("redis-cli is not installed (make deps)")
		}
		for _, tc := range []struct {
			name, addr string
			cluster    bool
		}{{"leader", c.Addr(l), false}, {"follower", c.Addr(f), false}, {"cluster", c.Addr(f), true}} {
			host, port, _ := strings.Cut(tc.addr, ":")
			cli := func(args ...string) string {
				base := []string{"-h", host, "-p", port, "--tls", "--cacert", certs.CA, "--cert", certs.ClientCert, "--key", certs.ClientKey}
				if tc.cluster {
					base = append(base, "-c")
				}
				out, err := exec.Command("redis-cli", append(base, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("redis-cli %s %v: %v\n%s", tc.name, args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			key := "tls:cli:" + tc.name
			if got := cli("SET", key, "me", "NX", "PX", "10000"); got != "OK" {
				t.Fatalf("redis-cli %s: SET NX = %q", tc.name, got)
			}
			if got := cli("EVAL", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", "1", key, "me"); got != "1" {
				t.Fatalf("redis-cli %s: release = %q", tc.name, got)
			}
		}
	})
	// ioredis over TLS in its four modes (the compat matrix's pinned copy).
	t.Run("ioredis", func(t *testing.T) {
		modules, _ := filepath.Abs("compat/matrix/node/node_modules")
		if _, err := os.Stat(filepath.Join(modules, "ioredis")); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skipf("ioredis is not installed (make compat-deps): %v", err)
			}
			t.Fatalf("ioredis is not installed (make compat-deps): %v", err)
		}
		out, err := exec.Command("node", "testdata/tls/ioredis.js", modules, certs.CA, certs.ClientCert, certs.ClientKey,
			c.Addr(l), c.Addr(f), sentinels[f]).CombinedOutput()
		if err != nil {
			t.Fatalf("ioredis over TLS: %v\n%s", err, out)
		}
		if got := strings.Count(string(out), " ok"); got != 4 {
			t.Fatalf("ioredis over TLS: %d modes ok, want 4:\n%s", got, out)
		}
	})
	// Symfony Lock over phpredis (leader, follower, RedisCluster) and the
	// redis gem 4.8 (the four modes), Debian's packages (make compat-deps).
	t.Run("php", func(t *testing.T) {
		if _, err := os.Stat("/usr/share/php/Symfony/Component/Lock/Store/RedisStore.php"); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skipf("php-symfony-lock is not installed (make compat-deps): %v", err)
			}
			t.Fatalf("php-symfony-lock is not installed (make compat-deps): %v", err)
		}
		out, err := exec.Command("php", "testdata/tls/symfony.php", certs.CA, certs.ClientCert, certs.ClientKey, c.Addr(l), c.Addr(f)).CombinedOutput()
		if err != nil {
			t.Fatalf("Symfony Lock over TLS: %v\n%s", err, out)
		}
		if got := strings.Count(string(out), " ok"); got != 3 {
			t.Fatalf("Symfony Lock over TLS: %d modes ok, want 3:\n%s", got, out)
		}
	})
	t.Run("ruby", func(t *testing.T) {
		if out, err := exec.Command("ruby", "-e", `require "redis"`).CombinedOutput(); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skipf("ruby-redis is not installed (make compat-deps): %v %s", err, out)
			}
			t.Fatalf("ruby-redis is not installed (make compat-deps): %v %s", err, out)
		}
		out, err := exec.Command("ruby", "testdata/tls/redisrb.rb", certs.CA, certs.ClientCert, certs.ClientKey, c.Addr(l), c.Addr(f), sentinels[f]).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-rb over TLS: %v\n%s", err, out)
		}
		if got := strings.Count(string(out), " ok"); got != 4 {
			t.Fatalf("redis-rb over TLS: %d modes ok, want 4:\n%s", got, out)
		}
	})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			rdb := m.rdb()
			defer rdb.Close()
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING: %v", err)
			}
			lk := dbclient.New(rdb).NewLock("tls:" + m.name + ":r")
			if err := lk.Lock(ctx); err != nil {
				t.Fatalf("Redisson-family lock: %v", err)
			}
			if err := lk.Unlock(ctx); err != nil {
				t.Fatalf("unlock: %v", err)
			}
			mu := redsync.New(goredis.NewPool(rdb)).NewMutex("tls:" + m.name + ":rs")
			if err := mu.LockContext(ctx); err != nil {
				t.Fatalf("redsync: %v", err)
			}
			if ok, err := mu.UnlockContext(ctx); err != nil || !ok {
				t.Fatalf("redsync unlock: %v %v", ok, err)
			}
			rl, err := redislock.New(rdb).Obtain(ctx, "tls:"+m.name+":rl", 10*time.Second, nil)
			if err != nil {
				t.Fatalf("redislock: %v", err)
			}
			if err := rl.Release(ctx); err != nil {
				t.Fatalf("redislock release: %v", err)
			}
		})
	}
}

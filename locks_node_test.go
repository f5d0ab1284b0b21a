package deadbolt

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeLocksScript takes locks with the compatibility matrix's pinned Node
// clients (compat/matrix/node): node-redlock 5 over ioredis and
// node-redisson's RLock. It leaves held: redlock "nrl" (taken, then
// extended) and node-redisson "nrs" (thread-1, a 30 s lease); it takes and
// releases redlock "nrl2" and node-redisson "nrs2"; a second redlock
// acquisition of "nrl" is refused. It prints what DEADBOLT LOCKS should
// name as the holders. Given "release", it then releases nrl and nrs too.
const nodeLocksScript = `
const Redis = require('ioredis');
const { default: Redlock, ExecutionError } = require('redlock');
const { Redisson, TimeUnit } = require('node-redisson');
const [host, port] = process.argv[1].split(':');
const releaseAll = process.argv[2] === 'release';
(async () => {
  const io = new Redis({ host, port: Number(port) });
  const redlock = new Redlock([io], { retryCount: 0 });
  let held = await redlock.acquire(['nrl'], 30000);
  held = await held.extend(30000);
  try {
    await redlock.acquire(['nrl'], 30000);
    throw new Error('a second redlock acquisition of a held resource succeeded');
  } catch (e) {
    if (!(e instanceof ExecutionError)) throw e;
  }
  const cycle = await redlock.acquire(['nrl2'], 30000);
  await cycle.release();
  const redisson = new Redisson({ redis: { options: { host, port: Number(port) } } });
  const nrs = redisson.getLock('nrs', 'thread-1');
  await nrs.lock(30, TimeUnit.SECONDS);
  const again = redisson.getLock('nrs2', 'thread-1');
  await again.lock(30, TimeUnit.SECONDS);
  await again.unlock();
  if (releaseAll) {
    await held.release();
    await nrs.unlock();
  }
  process.stdout.write(JSON.stringify({ redlock: held.value, redisson: redisson.commandExecutor.id + ':thread-1' }) + '\n');
  process.exit(0);
})().catch((e) => { console.error(e && e.stack || e); process.exit(1); });
`

// nodeLocks runs nodeLocksScript against addr (releasing its locks at the
// end if release) and returns the redlock value and the node-redisson
// holder field. Without node or the matrix's
// npm packages (make compat-deps) it skips, unless CI=true.
func nodeLocks(t *testing.T, addr string, release bool) (redlockValue, redissonField string) {
	t.Helper()
	dir := filepath.Join("compat", "matrix", "node")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else {
		for _, pkg := range []string{"ioredis", "redlock", "node-redisson"} {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
				missing = pkg + " is not installed in " + dir + " (make compat-deps)"
			}
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	args := []string{"-e", nodeLocksScript, addr}
	if release {
		args = append(args, "release")
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = dir // require() looks in its node_modules
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node clients: %v\n%s%s", err, out, stderr)
	}
	var got struct{ Redlock, Redisson string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &got); err != nil || got.Redlock == "" || got.Redisson == "" {
		t.Fatalf("node clients printed %q: %v", out, err)
	}
	return got.Redlock, got.Redisson
}

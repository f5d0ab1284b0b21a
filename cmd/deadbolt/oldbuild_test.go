package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// oldCommit is the older deadbolt the upgrade tests run beside this tree:
// the last commit of main before ACL users (log envelope version 3), lock
// shapes (snapshot version 3), the slotted stable store and the data
// directory's identity file, so that its formats really differ from
// today's. Keep it fixed: docs/OPERATIONS.md ("Upgrades") names it.
const oldCommit = "d5c42b3db007183bd145bb7d11c37c41adad037b"

// buildOld builds cmd/deadbolt at oldCommit (git archive into a temporary
// directory, go build) and returns the binary, cached by commit under the
// user cache directory so that reruns do not build it again. A clone that
// lacks the commit (a shallow one) fails the test under CI=true and skips
// it elsewhere.
func buildOld(t *testing.T) string {
	t.Helper()
	return prebuiltOr(t, "DEADBOLT_OLD_BIN", oldCommit)
}

// preFlagsCommit is the last commit of main before envelope version 4
// (function names that fold): a build that knows envelopes 1 to 3.
const preFlagsCommit = "cce4561f0ae0ed2c498bfebeb2464cee500e8444"

// buildPreFlags returns a binary of preFlagsCommit: DEADBOLT_PREFLAGS_BIN
// if set (as DEADBOLT_OLD_BIN for oldCommit), else buildAt's.
func buildPreFlags(t *testing.T) string {
	t.Helper()
	return prebuiltOr(t, "DEADBOLT_PREFLAGS_BIN", preFlagsCommit)
}

// prebuiltOr returns the binary the environment variable env names, if
// set, else buildAt's for rev.
func prebuiltOr(t *testing.T, env, rev string) string {
	t.Helper()
	if bin := os.Getenv(env); bin != "" {
		return bin
	}
	return buildAt(t, rev)
}

// buildAt builds cmd/deadbolt at rev, as buildOld says.
func buildAt(t *testing.T, rev string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		missingOld(t, "not in a git checkout: "+err.Error())
	}
	repo := strings.TrimSpace(string(top))
	full, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		missingOld(t, "commit "+rev+" is not in this clone (a shallow clone? fetch the full history: git fetch --unshallow)")
	}
	commit := strings.TrimSpace(string(full))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "deadbolt-upgrade-test", commit, "deadbolt")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".tmp"
	build := exec.Command("go", "build", "-o", tmp, "./cmd/deadbolt")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build deadbolt at %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func missingOld(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("upgrade test: %s", why)
	}
	t.Skipf("upgrade test: %s", why)
}

// TestOldBuildEnvOverrides: DEADBOLT_OLD_BIN and DEADBOLT_PREFLAGS_BIN
// name a prebuilt binary, and nothing is built.
func TestOldBuildEnvOverrides(t *testing.T) {
	t.Setenv("DEADBOLT_OLD_BIN", "/nonexistent/old")
	t.Setenv("DEADBOLT_PREFLAGS_BIN", "/nonexistent/preflags")
	if got := buildOld(t); got != "/nonexistent/old" {
		t.Errorf("buildOld: %s", got)
	}
	if got := buildPreFlags(t); got != "/nonexistent/preflags" {
		t.Errorf("buildPreFlags: %s", got)
	}
}

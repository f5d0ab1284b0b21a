package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"
)

// The files under deploy/, the Dockerfile and docker-compose.yml, checked
// against the binary: every configuration they pass is one deadbolt
// accepts, and every series the dashboard and the alerts use is one a
// node serves.

const repoRoot = "../.."

// checkArgs runs deadbolt's flag and configuration checks on args without
// starting a node (--version stops run once they have passed).
func checkArgs(t *testing.T, what string, args ...string) {
	t.Helper()
	var out, errb lockedBuffer
	if err := run(context.Background(), append(args, "--version"), &out, &errb); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestDeployConfigFiles(t *testing.T) {
	// The systemd example reads its secrets from systemd's credentials
	// directory: here, a temporary one.
	creds := t.TempDir()
	os.WriteFile(filepath.Join(creds, "cluster-secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	os.WriteFile(filepath.Join(creds, "password.conf"), []byte("requirepass \"s3cret pass\"\n"), 0o600)
	conf, err := os.ReadFile(filepath.Join(repoRoot, "deploy/deadbolt.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(conf), "/run/credentials/deadbolt.service", creds)
	if text == string(conf) {
		t.Fatal("deploy/deadbolt.conf no longer reads systemd's credentials: update this test and deploy/deadbolt.service")
	}
	local := filepath.Join(t.TempDir(), "deadbolt.conf")
	os.WriteFile(local, []byte(text), 0o600)
	checkArgs(t, "deploy/deadbolt.conf", "--config", local)
	checkArgs(t, "deploy/docker/deadbolt.conf", "--config", filepath.Join(repoRoot, "deploy/docker/deadbolt.conf"))

	// The unit's ExecStart passes the file at the path the unit names.
	unit, err := os.ReadFile(filepath.Join(repoRoot, "deploy/deadbolt.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/deadbolt --config /etc/deadbolt/deadbolt.conf", "LoadCredential=cluster-secret:", "LoadCredential=password.conf:", "StateDirectory=deadbolt"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("deploy/deadbolt.service lacks %q", want)
		}
	}
	if !strings.Contains(text, "data-dir /var/lib/deadbolt") {
		t.Error("deploy/deadbolt.conf's data-dir is not the unit's StateDirectory")
	}
	// systemd's own check of the unit, where systemd is installed.
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		bin := filepath.Join(t.TempDir(), "deadbolt")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
		u := filepath.Join(t.TempDir(), "deadbolt.service")
		os.WriteFile(u, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/deadbolt", bin)), 0o644)
		if out, err := exec.Command("systemd-analyze", "verify", u).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify deploy/deadbolt.service: %v\n%s", err, out)
		}
	} else {
		t.Log("systemd-analyze is not installed: the unit's syntax was not checked")
	}
}

type composeFile struct {
	Services map[string]struct {
		Build   any      `yaml:"build"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Volumes []string `yaml:"volumes"`
		Secrets []string `yaml:"secrets"`
	} `yaml:"services"`
	Secrets map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

// docker-compose.yml: three deadbolt nodes whose flags deadbolt accepts,
// naming each other as peers, and a Prometheus that scrapes each one's
// --http-addr.
func TestDeployCompose(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600)
	var httpAddrs, ids []string
	for name, s := range cf.Services {
		if s.Image != "deadbolt:latest" {
			for _, v := range s.Volumes {
				if host, _, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(host, "./") {
					if _, err := os.Stat(filepath.Join(repoRoot, host)); err != nil {
						t.Errorf("service %s mounts %s: %v", name, host, err)
					}
				}
			}
			continue
		}
		if s.Build == nil || !slices.Contains(s.Secrets, "cluster_secret") {
			t.Errorf("service %s: not built from the Dockerfile, or without the cluster secret", name)
		}
		args := make([]string, 0, len(s.Command))
		for _, a := range s.Command {
			a = strings.Replace(a, "${DEADBOLT_PASSWORD:?set DEADBOLT_PASSWORD}", "pw", 1)
			a = strings.Replace(a, "/run/secrets/cluster_secret", secret, 1)
			if v, ok := strings.CutPrefix(a, "--http-addr="); ok {
				httpAddrs = append(httpAddrs, v)
			}
			if v, ok := strings.CutPrefix(a, "--id="); ok {
				ids = append(ids, v)
				if v != name {
					t.Errorf("service %s has --id %s", name, v)
				}
			}
			if v, ok := strings.CutPrefix(a, "--peers="); ok && v != "n1=n1:7000,n2=n2:7000,n3=n3:7000" {
				t.Errorf("service %s: --peers %s", name, v)
			}
			args = append(args, a)
		}
		// The image's ENTRYPOINT passes its configuration first.
		checkArgs(t, "compose service "+name, append([]string{"--config", filepath.Join(repoRoot, "deploy/docker/deadbolt.conf")}, args...)...)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"n1", "n2", "n3"}) {
		t.Errorf("deadbolt services %v, want n1 n2 n3", ids)
	}
	if f := cf.Secrets["cluster_secret"].File; f != "./deploy/docker/cluster-secret" {
		t.Errorf("the cluster secret is read from %q", f)
	}

	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err = os.ReadFile(filepath.Join(repoRoot, "deploy/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName == "deadbolt" {
			for _, st := range sc.StaticConfigs {
				targets = append(targets, st.Targets...)
			}
		}
	}
	slices.Sort(targets)
	slices.Sort(httpAddrs)
	if !slices.Equal(targets, httpAddrs) || len(targets) != 3 {
		t.Errorf("Prometheus scrapes %v; the nodes serve metrics on %v", targets, httpAddrs)
	}
	if !slices.Equal(prom.RuleFiles, []string{"/etc/prometheus/alerts.yml"}) {
		t.Errorf("rule files %v", prom.RuleFiles)
	}
}

// seriesOnlySometimes are series a lone node does not serve: only a leader
// with followers has them.
var seriesOnlySometimes = map[string]bool{"deadbolt_raft_follower_last_contact_seconds": true}

// Every series the Grafana dashboard and the alert rules name is one a node
// serves on /metrics, and every alert has a panel that names it.
func TestDeployDashboardAndAlertsSeries(t *testing.T) {
	addr, httpAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out, errb lockedBuffer
	go func() {
		done <- run(ctx, []string{"--addr", addr, "--http-addr", httpAddr, "--data-dir", t.TempDir(), "--id", "n1"}, &out, &errb)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	dialWhenUp(t, addr).Close()
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer ccancel()
	for rc.Set(cctx, "k", "v", time.Minute).Err() != nil && cctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // until the lone node leads
	}
	rc.Do(cctx, "NOSUCHCOMMAND") // an error reply, for deadbolt_error_replies_total
	r, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	served := map[string]string{} // name -> type
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			served[f[2]] = f[3]
		}
	}
	known := func(name string) bool {
		if served[name] != "" || seriesOnlySometimes[name] {
			return true
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suf); ok && served[base] == "histogram" {
				return true
			}
		}
		return false
	}
	series := regexp.MustCompile(`\b(?:deadbolt|go|process)_[a-z0-9_]+\b`)

	var dash struct {
		Panels []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Targets     []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	var descriptions strings.Builder
	n := 0
	for _, p := range dash.Panels {
		descriptions.WriteString(p.Description)
		for _, tg := range p.Targets {
			for _, name := range series.FindAllString(tg.Expr, -1) {
				n++
				if !known(name) {
					t.Errorf("dashboard panel %q: %s is not served", p.Title, name)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("the dashboard names only %d series", n)
	}

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	b, err = os.ReadFile(filepath.Join(repoRoot, "deploy/prometheus/alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	readme, _ := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	for _, g := range rules.Groups {
		for _, rule := range g.Rules {
			for _, name := range series.FindAllString(rule.Expr, -1) {
				if !known(name) {
					t.Errorf("alert %s: %s is not served", rule.Alert, name)
				}
			}
			if rule.Alert != "DeadboltNodeDown" && !strings.Contains(descriptions.String(), rule.Alert) {
				t.Errorf("no dashboard panel shows alert %s", rule.Alert)
			}
			if !strings.Contains(string(readme), rule.Alert) {
				t.Errorf("README.md does not say what alert %s means", rule.Alert)
			}
		}
	}
}

// The Docker image, where a Docker daemon runs: built from the static
// binary without pulling anything, it serves clients, /healthz and /readyz.
func TestDockerImage(t *testing.T) {
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon: the image was not built or run (docker info: %v: %.200s)", err, out)
	}
	ctxDir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctxDir, "bin/deadbolt-static"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	for _, f := range []string{"Dockerfile", ".dockerignore", "deploy/docker/deadbolt.conf", "deploy/docker/data/README"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(ctxDir, f)), 0o755)
		os.WriteFile(filepath.Join(ctxDir, f), b, 0o644)
	}
	tag := fmt.Sprintf("deadbolt-test:%d", time.Now().UnixNano())
	docker := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	docker("build", "--pull=false", "-t", tag, ctxDir)
	defer exec.Command("docker", "rmi", "-f", tag).Run()
	id := docker("run", "-d", "-p", "127.0.0.1::6379", "-p", "127.0.0.1::9121", tag, "--requirepass", "pw")
	defer exec.Command("docker", "rm", "-f", id).Run()
	port := func(p string) string {
		out := docker("port", id, p)
		return strings.Split(out, "\n")[0]
	}
	addr, httpAddr := port("6379/tcp"), port("9121/tcp")
	rc := redis.NewClient(&redis.Options{Addr: addr, Password: "pw", MaxRetries: -1})
	defer rc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := rc.Set(ctx, "lock:x", "owner", time.Minute).Err()
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			logs, _ := exec.Command("docker", "logs", id).CombinedOutput()
			t.Fatalf("the container never served: %v\n%s", err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		r, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
	}
}

// The Dockerfile, without a daemon: it starts FROM scratch (nothing to
// pull), every file it copies exists (the binary once make static has
// run) and is let through by .dockerignore, and the configuration its
// ENTRYPOINT names is the one it copies.
func TestDeployDockerfile(t *testing.T) {
	df, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ign, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, l := range strings.Split(string(ign), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "!"); ok {
			allowed[p] = true
		}
	}
	if !strings.Contains(string(ign), "\n*\n") {
		t.Error(".dockerignore does not start from excluding everything")
	}
	var froms []string
	copied := map[string]string{} // destination -> source
	entry := ""
	for _, l := range strings.Split(string(df), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "FROM":
			froms = append(froms, f[1])
		case "COPY":
			args := slices.DeleteFunc(f[1:], func(a string) bool { return strings.HasPrefix(a, "--") })
			if len(args) != 2 {
				t.Errorf("COPY with %d paths: %s", len(args), l)
				continue
			}
			src := args[0]
			copied[args[1]] = src
			if !allowed[src] {
				t.Errorf(".dockerignore keeps %s out of the build context", src)
			}
			if src != "bin/deadbolt-static" {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
					t.Errorf("COPY %s: %v", src, err)
				}
			}
		case "ENTRYPOINT":
			entry = strings.Join(f[1:], " ")
		}
	}
	if !slices.Equal(froms, []string{"scratch"}) {
		t.Errorf("FROM %v, want scratch alone (no base image to pull)", froms)
	}
	if copied["/deadbolt"] != "bin/deadbolt-static" || copied["/etc/deadbolt/deadbolt.conf"] != "deploy/docker/deadbolt.conf" {
		t.Errorf("COPY: %v", copied)
	}
	if entry != `["/deadbolt", "--config", "/etc/deadbolt/deadbolt.conf"]` {
		t.Errorf("ENTRYPOINT %s", entry)
	}
	mk, _ := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if !strings.Contains(string(mk), "CGO_ENABLED=0 GOOS=linux $(GO) build") || !strings.Contains(string(mk), "-o bin/deadbolt-static") {
		t.Error("make static no longer builds bin/deadbolt-static without cgo")
	}
}

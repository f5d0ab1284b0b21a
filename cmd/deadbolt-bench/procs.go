package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// freePorts finds n distinct free loopback ports. They are closed again
// before being handed to a server, so another process may take one first;
// the server then fails to start and says so.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// proc is a server child process whose output goes to a log file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startProc starts bin with args, its stdout and stderr going to
// name.log in dir, with GOMAXPROCS=procs in its environment unless procs
// is 0.
func startProc(name, dir string, procs int, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if procs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stop kills the process and waits for it.
func (p *proc) stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// exitErr is nil while the process runs, else an error with the end of
// its log.
func (p *proc) exitErr() error {
	select {
	case <-p.exited:
	default:
		return nil
	}
	b, _ := os.ReadFile(p.log)
	s := string(b)
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return fmt.Errorf("%s exited: %s", p.name, strings.TrimSpace(s))
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/deadbolt/deadbolt/internal/faultfs"
)

// disk-eio against Redis + AOF + Sentinel: as for deadbolt's nodes
// (diskfuse.go), each redis-server's --dir is a FUSE loopback
// (internal/faultfs) over a tmpfs of its own: OUT/redis-hN.disk is the
// tmpfs, OUT/redis-hN the loopback of it. A disk-eio fault makes the
// kernel answer the primary's own calls on its AOF (the incremental file
// Redis 7 appends to) with EIO: its fdatasync at one fault, its write(2)
// at the next, in turn. Healing ends the fault; a server that exited is
// restarted on the same directory, which works again (as healing restarts
// a deadbolt node on a working disk); one that ran on is left running, and
// the heal says whether it takes writes again. The other disk faults fill
// the tmpfs underneath (not through the loopback).
//
// Redis 7.0.15 (src/aof.c, src/bio.c, src/server.c): with appendfsync
// always a failed write or fdatasync of the AOF ends the server (exit 1,
// before the replies of that event-loop pass are sent); with everysec a
// failed write is kept in the buffer and retried, a failed background
// fdatasync is only recorded, and either way writes (and PING) get MISCONF
// until a later write or background fdatasync of the AOF succeeds.

// aofFiles is the glob of the files a disk-eio fault fails: the
// incremental AOF (appendonlydir/appendonly.aof.N.incr.aof), not the
// manifest or the base file, which Redis writes only at a rewrite.
const aofFiles = "*.incr.aof"

// eioModes are the calls a disk-eio fault fails, in turn.
var eioModes = []string{"fsync", "write"}

// failAOF makes f fail the AOF's mode calls ("fsync" or "write").
func failAOF(f *faultfs.FS, mode string) {
	if mode == "write" {
		f.FailWrite(aofFiles)
	} else {
		f.FailSync(aofFiles)
	}
}

// redisDisk is one redis-server's directory: dir is its --dir; disk the
// tmpfs under it, which the disk-full faults fill; fs the loopback
// between them (nil: dir is the tmpfs itself).
type redisDisk struct {
	dir, disk string
	fs        *faultfs.FS
}

// redisEIO is the disk-eio fault on the primary p (its directory d, its
// address addr): its AOF's mode calls fail until healing.
func redisEIO(p *redisProc, d *redisDisk, mode, addr string, l *lab) (string, func() string, error) {
	if d.fs == nil {
		return "", nil, errors.New("no FUSE loopback under the servers' directories: disk-eio not run")
	}
	before := d.fs.Faults()
	failAOF(d.fs, mode)
	heal := func() string {
		n := d.fs.Faults() - before
		if !p.running() {
			d.fs.Clear()
			err := p.start(l)
			return fmt.Sprintf("%d calls failed; the primary had exited (%s); restarted on its directory, which works again (%v)", n, lastLine(p.logf), err)
		}
		at := aofState(addr)
		d.fs.Clear()
		start := time.Now()
		after := aofState(addr)
		for strings.Contains(after, "aof_last_write_status:err") && time.Since(start) < 3*time.Second {
			time.Sleep(100 * time.Millisecond)
			after = aofState(addr)
		}
		how := fmt.Sprintf("ok %d ms after the fault ended", time.Since(start).Milliseconds())
		if strings.Contains(after, "aof_last_write_status:err") {
			how = "still err 3 s after the fault ended"
		}
		return fmt.Sprintf("%d calls failed; the primary ran on: at healing %s; %s", n, at, how)
	}
	return fmt.Sprintf("its AOF's %s fails with EIO (FUSE: the kernel's)", mode), heal, nil
}

// aofState is a server's role and AOF write status, from INFO.
func aofState(addr string) string {
	c := adminClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "replication", "persistence").Result()
	if err != nil {
		return "INFO: " + err.Error()
	}
	var out []string
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "role:") || strings.HasPrefix(line, "aof_last_write_status:") {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}

// mountRedisDisks gives each directory a tmpfs of its own: with eio, at
// dir.disk under a loopback at dir (when this machine has FUSE; else
// noFUSE says why, and the tmpfs is at dir); without, at dir. undo
// unmounts them all (the servers stopped first).
func mountRedisDisks(dirs []string, size int64, eio bool) (disks []*redisDisk, noFUSE string, undo func(), err error) {
	var tmpfs []string
	undo = func() {
		for _, d := range disks {
			if d.fs != nil {
				d.fs.Unmount()
			}
		}
		for _, mp := range tmpfs {
			exec.Command("umount", mp).Run()
		}
	}
	if eio {
		if err := faultfs.Available(); err != nil {
			noFUSE, eio = err.Error(), false
		}
	}
	for _, dir := range dirs {
		d := &redisDisk{dir: dir, disk: dir}
		if eio {
			d.disk = dir + ".disk"
		}
		for _, p := range []string{d.dir, d.disk} {
			if err := os.MkdirAll(p, 0o755); err != nil {
				undo()
				return nil, "", nil, err
			}
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", d.disk).CombinedOutput(); err != nil {
			undo()
			return nil, "", nil, fmt.Errorf("mount a tmpfs on %s: %v: %s", d.disk, err, strings.TrimSpace(string(out)))
		}
		tmpfs = append(tmpfs, d.disk)
		if eio {
			if d.fs, err = faultfs.Mount(d.dir, d.disk); err != nil {
				undo()
				return nil, "", nil, err
			}
		}
		disks = append(disks, d)
	}
	return disks, noFUSE, undo, nil
}

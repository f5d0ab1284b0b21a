package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// pruneOut removes the subdirectories of out (the nodes' and servers'
// data: a run leaves about half a gigabyte) and keeps its files (the
// report, the logs, the history), for a run that passed in a directory
// the harness made itself: make chaos, run after run, would otherwise
// fill the disk. A failed run, or one given --out, keeps everything. Out
// is left whole if anything is still mounted below it (a loopback or a
// tmpfs the teardown did not get off): removing through a mount is not
// the harness's business.
func pruneOut(out string, w io.Writer) {
	if m := mountsUnder(readMountInfo(), out); len(m) > 0 {
		fmt.Fprintf(w, "deadbolt-chaos: %s kept whole: %s still mounted there\n", out, strings.Join(m, ", "))
		return
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		fmt.Fprintf(w, "deadbolt-chaos: %s kept: %v\n", out, err)
		return
	}
	var removed []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
			fmt.Fprintf(w, "deadbolt-chaos: %v\n", err)
			continue
		}
		removed = append(removed, e.Name())
	}
	if len(removed) > 0 {
		fmt.Fprintf(w, "deadbolt-chaos: passed: removed the data directories %s under %s; the report and logs are kept (--out DIR keeps everything)\n",
			strings.Join(removed, " "), out)
	}
}

// readMountInfo is this process's /proc/self/mountinfo, empty if it
// cannot be read.
func readMountInfo() string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return string(b)
}

// mountsUnder returns the mount points in mountinfo (the format of
// /proc/self/mountinfo: the fifth field is the mount point, with spaces
// and such written as octal escapes) that are dir or below it.
func mountsUnder(mountinfo, dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space) in
// a mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

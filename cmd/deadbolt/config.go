package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/deadbolt/deadbolt/resp"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/deadbolt/deadbolt/server"
)

// --config FILE: directives in redis.conf's syntax, one per line. Every
// flag is a directive of the same name without the dashes ("addr
// 10.0.0.1:6379", "data-dir /var/lib/deadbolt"); its value is read as the
// flag's would be, and a boolean flag also takes yes or no. Arguments are
// split as redis-server splits them: "double quotes" with \n \r \t \b \a
// \\ \" \xHH escapes, 'single quotes' with \' only, a closing quote
// followed by a space or the end of the line. "# ..." lines and blank
// lines are skipped; "include OTHER" reads another file there (a relative
// name is from the including file's directory). A flag given on the
// command line wins over the file, as with redis-server FILE --port N.
// An unknown directive or a bad value stops the start with FILE:LINE.

// maxIncludeDepth bounds include chains (and so include loops).
const maxIncludeDepth = 8

// loadConfigFile applies path's directives to fs, except those of flags in
// cmdline (given on the command line).
func loadConfigFile(fs *flag.FlagSet, path string, cmdline map[string]bool) error {
	return loadConfig(fs, path, cmdline, 0)
}

func loadConfig(fs *flag.FlagSet, path string, cmdline map[string]bool, depth int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		where := fmt.Sprintf("%s:%d", path, i+1)
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args, err := splitArgs(line)
		if err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		if len(args) == 0 {
			continue
		}
		name := strings.ToLower(args[0])
		switch name {
		case "include":
			if len(args) != 2 {
				return fmt.Errorf("%s: include takes one file name", where)
			}
			if depth+1 >= maxIncludeDepth {
				return fmt.Errorf("%s: includes nested deeper than %d (a loop?)", where, maxIncludeDepth)
			}
			inc := args[1]
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			if err := loadConfig(fs, inc, cmdline, depth+1); err != nil {
				return fmt.Errorf("%w\n\tincluded from %s", err, where)
			}
			continue
		case "config", "version":
			return fmt.Errorf("%s: %q is a command-line flag only", where, name)
		}
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("%s: unknown directive %q", where, args[0])
		}
		if len(args) != 2 {
			return fmt.Errorf("%s: %s takes one argument, got %d (quote a value with spaces)", where, name, len(args)-1)
		}
		if cmdline[name] {
			continue // the command line wins
		}
		v := args[1]
		if isBoolFlag(f) {
			switch strings.ToLower(v) {
			case "yes":
				v = "true"
			case "no":
				v = "false"
			}
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("%s: bad value for %s: %v", where, name, err)
		}
	}
	return nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// splitArgs splits a line into arguments as redis-server reads its
// configuration file (sdssplitargs, as for inline requests).
func splitArgs(line string) ([]string, error) {
	args, ok := resp.SplitInline([]byte(line))
	if !ok {
		return nil, errors.New("unbalanced quotes, or a closing quote not followed by a space")
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, nil
}

// choice is a flag whose value is one of a fixed set, checked when it is
// set (so that a configuration file's bad value names its line).
type choice struct {
	v       string
	allowed []string
}

func (c *choice) String() string { return c.v }

func (c *choice) Set(v string) error {
	for _, a := range c.allowed {
		if v == a {
			c.v = v
			return nil
		}
	}
	return fmt.Errorf("want %s", strings.Join(c.allowed, ", "))
}

func newChoice(fs *flag.FlagSet, name, def, usage string, allowed ...string) *string {
	c := &choice{v: def, allowed: allowed}
	fs.Var(c, name, usage)
	return &c.v
}

// byteSize is a flag in bytes that also takes redis.conf's units (k, m,
// g: 1000s; kb, mb, gb: 1024s; parseSize).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// sizeText is a size flag kept as written (its default shows as "64mb"),
// checked with parseSize when it is set.
type sizeText struct{ v string }

func (s *sizeText) String() string { return s.v }

func (s *sizeText) Set(v string) error {
	if _, err := parseSize(v); err != nil {
		return err
	}
	s.v = v
	return nil
}

func newSizeText(fs *flag.FlagSet, name, def, usage string) *string {
	s := &sizeText{v: def}
	fs.Var(s, name, usage)
	return &s.v
}

// startupParams are the values CONFIG GET reports for the Redis
// parameters that flags set but the server does not apply itself, and
// for every flag that is not a Redis parameter (deadbolt's own, such as
// data-dir or heartbeat-timeout: CONFIG GET shows them, CONFIG SET
// refuses them).
func startupParams(fs *flag.FlagSet, logLevel, dataDir, aclFile string, tlsCluster bool) map[string]string {
	p := map[string]string{
		// Redis's levels: debug, verbose, notice, warning.
		"loglevel":    map[string]string{"debug": "debug", "info": "notice", "warn": "warning", "error": "warning"}[logLevel],
		"aclfile":     aclFile,
		"tls-cluster": "no",
	}
	if tlsCluster {
		p["tls-cluster"] = "yes"
	}
	if dataDir != "" {
		if abs, err := filepath.Abs(dataDir); err == nil {
			dataDir = abs
		}
		p["dir"] = dataDir
	}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "enable-debug-command" {
			p[f.Name] = f.Value.String() // immutable: the server reads it from here
			return
		}
		if server.IsConfigParam(f.Name) || f.Name == "version" || strings.HasPrefix(f.Usage, "test only:") {
			return // the server's own value; or no parameter
		}
		v := f.Value.String()
		if isBoolFlag(f) {
			v = map[string]string{"true": "yes", "false": "no"}[v]
		}
		p[f.Name] = v
	})
	return p
}

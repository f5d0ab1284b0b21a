package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A data directory says whose it is and in which format: the file
// deadbolt.id, written (through a temporary file, synced, renamed) the first
// time a node starts on the directory, or on one an earlier build wrote:
//
//	deadbolt data directory
//	format 1
//	node n1
//
// At start-up a directory whose file names another node (another member's
// directory, or another cluster's), or a newer format, is refused, as is
// a damaged file. Its presence also tells an emptied or removed log apart
// from a new directory: a node whose identity file (or snapshots) is there
// but whose stable store is not has lost its term and vote, and must not
// start as a fresh node (the log store cannot tell: an empty log directory
// looks new to it).

const (
	identityFile   = "deadbolt.id"
	identityHead   = "deadbolt data directory"
	dataFormat     = 1 // what this build writes and reads
	identityFormat = "%s\nformat %d\nnode %s\n"
)

type identity struct {
	format int
	node   string
}

// readIdentity reads dataDir's identity file; ok is false if there is
// none.
func readIdentity(dataDir string) (id identity, ok bool, err error) {
	path := filepath.Join(dataDir, identityFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return identity{}, false, nil
	}
	if err != nil {
		return identity{}, false, err
	}
	damaged := func(why string) error {
		return fmt.Errorf("cluster: %s is damaged (%s): it names the node and format of the data directory %s; if this is that node's directory, remove the file and start again (it is written anew)", path, why, dataDir)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != identityHead {
		return identity{}, false, damaged("not three lines, the first " + strconv.Quote(identityHead))
	}
	f, ok1 := strings.CutPrefix(lines[1], "format ")
	node, ok2 := strings.CutPrefix(lines[2], "node ")
	format, ferr := strconv.Atoi(f)
	if !ok1 || !ok2 || ferr != nil || format < 1 || node == "" {
		return identity{}, false, damaged("bad format or node line")
	}
	return identity{format: format, node: node}, true, nil
}

// checkIdentity refuses a data directory another node's, or a newer
// build's, and one whose stable store is gone although it held state. It
// returns whether the identity file must still be written (writeIdentity,
// once the stores opened).
func checkIdentity(dataDir, id string) (write bool, err error) {
	ident, ok, err := readIdentity(dataDir)
	if err != nil {
		return false, err
	}
	path := filepath.Join(dataDir, identityFile)
	if ok && ident.format > dataFormat {
		return false, fmt.Errorf("cluster: %s: the data directory is in format %d, written by a newer build (this one reads format %d): start the node with that build", path, ident.format, dataFormat)
	}
	if ok && ident.node != id {
		return false, fmt.Errorf("cluster: %s: the data directory %s belongs to node %q, not %q: start that node with it, or give this node its own directory (with --join to add it to a cluster)", path, dataDir, ident.node, id)
	}
	if LogStoreKind(dataDir) == StoreRaftlog {
		stable := filepath.Join(dataDir, raftlogDir, "stable")
		st, serr := os.Stat(stable)
		if serr != nil || st.Size() == 0 {
			held := ""
			if ok {
				held = path
			} else if snaps, _ := filepath.Glob(filepath.Join(dataDir, "snapshots", "*-*-*")); len(snaps) > 0 {
				held = snaps[0]
			}
			if held != "" {
				return false, fmt.Errorf("cluster: %s is missing or empty, but %s shows the directory held a node's state: its term and vote are gone, and it could vote twice in one term; %s", stable, held, repairHint(id, dataDir))
			}
		}
	}
	return !ok, nil
}

// writeIdentity writes dataDir's identity file, naming node id.
func writeIdentity(dataDir, id string) error {
	path := filepath.Join(dataDir, identityFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, identityFormat, identityHead, dataFormat, id)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(dataDir); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cluster: write %s: %w", path, err)
	}
	return nil
}

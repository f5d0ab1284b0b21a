package cluster

import (
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
)

// A group's size is measured as the leader writes it: a folding FCALL is
// marked (envelope version 4, a byte of flags), so a group one byte under
// the limit unmarked is over it as written. With PreserveDowngrade it is
// written unmarked, and fits.
func TestFunctionRuleGroupSizeMarked(t *testing.T) {
	cmds := []fsm.Command{cmd("FCALL", "abc", "0")}
	unmarkedSize := EntrySize(Entry{Cmd: cmds[0]})
	fold := &Node{cfg: Config{MaxEntryBytes: int64(unmarkedSize)}}
	if err := fold.checkGroupSize(cmds); err == nil {
		t.Errorf("a group of %d bytes unmarked, %d marked, fits a limit of %d", unmarkedSize,
			EntrySize(Entry{Cmd: fold.withRule(cmds[0])}), unmarkedSize)
	}
	keep := &Node{cfg: Config{MaxEntryBytes: int64(unmarkedSize), PreserveDowngrade: true}}
	if err := keep.checkGroupSize(cmds); err != nil {
		t.Errorf("with PreserveDowngrade: %v", err)
	}
}

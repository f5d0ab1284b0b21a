package difftest

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/deadbolt/deadbolt"
	"github.com/deadbolt/deadbolt/internal/testredis"
)

// transcriptDir is testdata/transcripts at the module root.
var transcriptDir = filepath.Join("..", "..", "testdata", "transcripts")

// TestTranscripts runs every transcript against a fresh redis-server and a
// fresh deadbolt node, over RESP2 and again over RESP3, and reports every
// step whose replies differ.
func TestTranscripts(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) { runTranscripts(t, proto) })
	}
}

func runTranscripts(t *testing.T, proto int) {
	files, err := filepath.Glob(filepath.Join(transcriptDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts in %s", transcriptDir)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name[:len(name)-len(".txt")], func(t *testing.T) {
			t.Parallel()
			tr, err := ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			redisAddr := testredis.Start(t)
			node := deadbolt.RunT(t)
			ms := RunProto(tr, redisAddr, node.Addr(), proto)
			for _, m := range ms {
				t.Error(m.String())
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/deadbolt/deadbolt/cluster"
)

// deadbolt downgrade --data-dir DIR: run by this build on a stopped node's
// data directory before the node starts again with an older build. It
// writes the stable store in its first layout and every snapshot in a
// format version the older build reads (cluster.Downgrade; docs/OPERATIONS.md,
// "Upgrades").

func init() { subcommands["downgrade"] = runDowngrade }

func runDowngrade(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadbolt downgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "the stopped node's data `directory` (required)")
	snapMax := fs.Int("snapshot-version", 2, "the highest snapshot format `version` the older build reads: 2 for builds before lock shapes (2026-11-26), 1 before replicated settings")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("downgrade: unexpected argument %q", fs.Arg(0))
	}
	if *dataDir == "" {
		return errors.New("downgrade: --data-dir DIRECTORY is required (the node must be stopped)")
	}
	rep, err := cluster.Downgrade(*dataDir, *snapMax)
	if err != nil {
		return err
	}
	stable := "already in the first layout"
	if rep.StableRewritten {
		stable = "rewritten in the first layout"
	}
	snaps := "none newer than version " + fmt.Sprint(*snapMax)
	if len(rep.Snapshots) > 0 {
		snaps = fmt.Sprintf("%d rewritten at version %d (%s)", len(rep.Snapshots), *snapMax, strings.Join(rep.Snapshots, ", "))
	}
	fmt.Fprintf(stdout, "%s: stable store %s; snapshots: %s\n", *dataDir, stable, snaps)
	return nil
}

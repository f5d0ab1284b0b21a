// Command deadbolt is a lock server that speaks the Redis protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/deadbolt/deadbolt"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "deadbolt:", err)
		}
		os.Exit(1)
	}
}

// run parses flags, starts a node and serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadbolt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr        = fs.String("addr", "127.0.0.1:6379", "RESP listen address `host:port`")
		requirepass = fs.String("requirepass", "", "require clients to AUTH with this `password`")
		maxClients  = fs.Int("maxclients", 10000, "maximum number of client connections")
		maxBulk     = fs.Int64("proto-max-bulk-len", 512<<20, "largest bulk argument a client may send, in `bytes`")
		logLevel    = fs.String("log-level", "info", "log level: debug, info, warn, error")
		showVersion = fs.Bool("version", false, "print the version and exit")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *showVersion {
		fmt.Fprintln(stdout, "deadbolt", version)
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("bad -log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	node, err := deadbolt.Start(deadbolt.Config{
		Addr:        *addr,
		RequirePass: *requirepass,
		MaxClients:  *maxClients,
		MaxBulkLen:  *maxBulk,
		Logger:      logger,
		Version:     version,
	})
	if err != nil {
		return err
	}
	logger.Info("deadbolt ready", "addr", node.Addr(), "version", version)
	<-ctx.Done()
	logger.Info("shutting down")
	return node.Close()
}

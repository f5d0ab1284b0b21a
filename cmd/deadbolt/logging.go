package main

import (
	"io"
	"log/slog"
)

// newLogger writes records to w as text (key=value) or as JSON, one object
// a line, for a log collector. Leader changes ("leader ready", "raft:
// leader changed"), membership changes ("cluster: membership changed")
// and slow commands ("slow command") are records of their own, with their
// details as attributes.
//
// In JSON a duration is written as the text writes it ("375ms"), not as
// slog's JSON handler would, a bare count of nanoseconds that names no
// unit.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every transcript parses and runs only in columns the runner knows.
func TestTranscriptsParse(t *testing.T) {
	ts, err := loadTranscripts(filepath.Join("..", "..", "compat", "matrix", "cli"))
	if err != nil {
		t.Fatal(err)
	}
	known := []string{"single", "direct", "sentinel", "cluster", "redis"}
	for _, tr := range ts {
		for _, m := range tr.modes {
			if !slices.Contains(known, m) {
				t.Errorf("%s: unknown mode %q (want one of %v)", tr.name, m, known)
			}
		}
		for _, s := range tr.sections {
			if s.subscriber != "" && len(s.confirm) == 0 {
				t.Errorf("%s: subscriber %s has no \"--- confirmed\" lines", tr.name, s.subscriber)
			}
			if s.subscriber == "" && len(s.commands) == 0 {
				t.Errorf("%s: a commands section without commands", tr.name)
			}
		}
	}
}

func TestParseTranscript(t *testing.T) {
	tr, err := parseTranscript("t.txt", strings.Join([]string{
		"# a comment",
		"# modes: single redis",
		"=== subscribe sub: SUBSCRIBE ${P}c",
		"1) \"subscribe\"",
		"--- confirmed",
		"1) \"message\"",
		"=== commands",
		"> PUBLISH ${P}c m",
		"(integer) 1",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.modes, []string{"single", "redis"}) || len(tr.sections) != 2 {
		t.Fatalf("modes %v, %d sections", tr.modes, len(tr.sections))
	}
	sub, cmds := tr.sections[0], tr.sections[1]
	if sub.subscriber != "sub" || !slices.Equal(sub.args, []string{"SUBSCRIBE", "${P}c"}) ||
		!slices.Equal(sub.confirm, []string{`1) "subscribe"`}) || !slices.Equal(sub.want, []string{`1) "message"`}) {
		t.Errorf("subscriber section %+v", sub)
	}
	if !slices.Equal(cmds.commands, []string{"PUBLISH ${P}c m"}) || !slices.Equal(cmds.want, []string{"(integer) 1"}) {
		t.Errorf("commands section %+v", cmds)
	}
	for _, bad := range []string{"> PING\n", "# modes: single\n=== subscribe no colon\n"} {
		if _, err := parseTranscript("bad.txt", bad); err == nil {
			t.Errorf("parseTranscript(%q) succeeded", bad)
		}
	}
}

func TestDiffLines(t *testing.T) {
	if d := diffLines([]string{"a", "b "}, []string{"a", "b"}); d != "" {
		t.Errorf("trailing spaces should not count:\n%s", d)
	}
	d := diffLines([]string{"a", "b", "c"}, []string{"a", "x"})
	if !strings.Contains(d, `want "b"`) || !strings.Contains(d, `got  "x"`) || !strings.Contains(d, "3 lines expected, 2 printed") {
		t.Errorf("diff:\n%s", d)
	}
}

func TestErrorsBeforeKill(t *testing.T) {
	for line, want := range map[string]int{
		"RECOVERED: 3 grants 1.4s after the kill; errors: 0 before the kill, 1 after (last: x)": 0,
		"RECOVERED: 3 grants 1.4s after the kill; errors: 12 before the kill, 0 after (last: )": 12,
		"": 0,
	} {
		if got := errorsBeforeKill(line); got != want {
			t.Errorf("errorsBeforeKill(%q) = %d, want %d", line, got, want)
		}
	}
}

// Every row names only columns that exist, and every column is used.
func TestRowsAndColumns(t *testing.T) {
	used := map[string]bool{}
	for _, r := range rows {
		for _, c := range r.cols {
			columnByName(c) // panics on an unknown name
			used[c] = true
		}
	}
	for _, c := range columns {
		if !used[c.name] {
			t.Errorf("column %s has no client", c.name)
		}
	}
}

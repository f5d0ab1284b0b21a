#!/usr/bin/env bash
# Runs every Fuzz* target for the given time each (default 30s).
set -euo pipefail
t="${1:-30s}"
for pkg in $(go list ./...); do
	for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $f ($t)"
		go test -run '^$' -fuzz "^${f}\$" -fuzztime "$t" "$pkg"
	done
done

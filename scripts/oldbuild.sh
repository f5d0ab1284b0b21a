#!/usr/bin/env bash
# Builds bin/deadbolt of the older commit that the upgrade tests
# (cmd/deadbolt/oldbuild_test.go) and the chaos run's upgrade nemesis swap
# nodes to and from, cached by commit in the user cache directory (the
# test's cache), and prints the binary's path. Fails, saying why, on a
# clone without that commit (a shallow one).
set -euo pipefail
commit=d5c42b3db007183bd145bb7d11c37c41adad037b # as oldCommit in oldbuild_test.go
repo=$(git rev-parse --show-toplevel)
if ! git -C "$repo" rev-parse --verify --quiet "$commit^{commit}" >/dev/null; then
	echo "oldbuild: commit $commit is not in this clone (a shallow clone? git fetch --unshallow)" >&2
	exit 1
fi
dir=${XDG_CACHE_HOME:-$HOME/.cache}/deadbolt-upgrade-test/$commit
bin=$dir/deadbolt
if [ ! -x "$bin" ]; then
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	git -C "$repo" archive "$commit" | tar -x -C "$src"
	mkdir -p "$dir"
	(cd "$src" && GOFLAGS=-mod=readonly ${GO:-go} build -o "$bin.tmp" ./cmd/deadbolt)
	mv "$bin.tmp" "$bin"
fi
echo "$bin"

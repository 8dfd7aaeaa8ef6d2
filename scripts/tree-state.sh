#!/usr/bin/env bash
# tree-state.sh - print a hash of a git work tree's exact state (HEAD's tree, staged and
# unstaged changes, untracked files that are not ignored) plus any extra files given.
# Build scripts compare it with the state they last built, to skip a no-op rebuild.
#
# Usage: scripts/tree-state.sh DIR [EXTRA-FILE...]
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [EXTRA-FILE...]" >&2; exit 2; }
dir=$1
shift
{
	# The tree, not the commit: a developer's tree and a fresh clone's, which applied
	# the same patch files, hold the same files under different commit ids.
	git -C "$dir" rev-parse 'HEAD^{tree}'
	git -C "$dir" diff HEAD
	git -C "$dir" ls-files --others --exclude-standard -z | (cd "$dir" && xargs -0 -r sha256sum)
	# The contents only: the same file in another clone has another path.
	for f in "$@"; do sha256sum <"$f"; done
} | sha256sum | cut -d' ' -f1

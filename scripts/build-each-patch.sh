#!/usr/bin/env bash
# build-each-patch.sh - build every commit of a row's kernel series on its own, in order,
# as a bisect would: "each patch builds" is a rule of the kernel's patch flow.
#
# Usage: scripts/build-each-patch.sh SRCDIR FRAGMENT...
#
#   Checks out each commit of pristine..HEAD of SRCDIR (a git tree made by sources.sh)
#   in a worktree, build/each/src/NAME, builds its bzImage with scripts/build-kernel.sh
#   in one object directory, build/each/NAME (so each build is incremental on the one
#   before), and prints one TAP line per commit.  The two sit as build/src/NAME and
#   build/NAME do, so the compiler sees the same relative paths and ccache serves the
#   first build from the row's own.  The build cache is not used:
#   each commit must really be compiled.  The configuration fragments are merged again
#   at each commit, and an option that a later commit adds (or selects) is left out
#   until it does (RESEED_KCONFIG_LAX), so each commit is built with every option it has.  A run
#   over a series that only grew on top builds the new commits only (build/each/NAME.built
#   lists the commits built in order).  Exit status 0 when every commit built.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SRCDIR FRAGMENT..." >&2; exit 2; }
src=$(realpath "$1")
shift
name=$(basename "$src")
work=build/each/src/$name obj=build/each/$name
mkdir -p build/each/src
git -C "$src" worktree prune
[ -d "$work" ] || git -C "$src" worktree add -q --detach "$(realpath -m "$work")" pristine

# The commits that built, in order, in this object directory: a run over a series that
# only grew (new commits on top of the same ids) starts at the first new commit, on the
# object directory the last one left.  The list is reset whenever a commit is new.
built=$obj.built
touch "$built"
mapfile -t commits < <(git -C "$src" rev-list --reverse pristine..HEAD)
echo "1..${#commits[@]}"
n=0 failed=0 fresh=
for c in "${commits[@]}"; do
	n=$((n + 1))
	subject=$(git -C "$src" log -1 --format=%s "$c")
	if [ -z "$fresh" ] && [ "$(sed -n "${n}p" "$built")" = "$c" ]; then
		echo "ok $n - $subject (built by an earlier run in $obj)"
		continue
	fi
	[ -n "$fresh" ] || sed -i "$n,\$d" "$built"
	fresh=1
	git -C "$work" checkout -q --detach "$c"
	start=$(date +%s)
	if RESEED_BUILD_CACHE='' RESEED_KCONFIG_LAX=1 scripts/build-kernel.sh "$work" "$obj" "$@" \
		>"$obj.log" 2>&1; then
		echo "ok $n - $subject ($(($(date +%s) - start)) s)"
		[ $failed -gt 0 ] || echo "$c" >>"$built"
	else
		echo "not ok $n - $subject (log: $obj.log)"
		tail -20 "$obj.log" | sed 's/^/# /'
		failed=$((failed + 1))
	fi
done
exit $((failed > 0))

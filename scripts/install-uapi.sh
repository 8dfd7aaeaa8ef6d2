#!/usr/bin/env bash
# install-uapi.sh - the uapi headers of a row's Linux tree, for the guest programs.
#
# Usage: scripts/install-uapi.sh LINUX-SRCDIR OUTDIR
#
#   'make headers_install' from the source tree into OUTDIR/include.  It needs no
#   configuration and no kernel build: the guest programs, which use RNDEPOCH and the
#   other ABIs of the series, need only the row's sources, and make audit, which boots
#   an operator's kernel, builds none of ours.  The install is skipped while the tree is
#   as it was at the last one (scripts/tree-state.sh), and OUTDIR/.installed, which the
#   guest programs depend on, is rewritten only when the installed headers changed: a
#   kernel edit that leaves the uapi alone rebuilds no guest program.  The headers are
#   kept under RESEED_BUILD_CACHE's parent (~/.cache/reseed-lab/uapi), keyed by the tree's
#   state, for a fresh clone; RESEED_BUILD_CACHE= (empty) turns it off.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 LINUX-SRCDIR OUTDIR" >&2; exit 2; }
src=$(realpath "$1") out=$(realpath -m "$2")
[ -f "$src/Makefile" ] || { echo "install-uapi: $src is not a Linux tree (make sources)" >&2; exit 1; }

state=$("$(dirname "$0")/tree-state.sh" "$src" "$0")
if [ -f "$out/.installed" ] && [ "$(cat "$out/.state" 2>/dev/null)" = "$state" ]; then
	echo "install-uapi: $src unchanged since the last install"
	exit 0
fi
cache=${RESEED_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/kernel}
[ -z "$cache" ] || cache=$(dirname "$cache")/uapi/${state:0:32}
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
rm -rf "$out.new"
if [ -n "$cache" ] && [ -f "$cache/.complete" ]; then
	mkdir -p "$out.new" && cp -a "$cache/include" "$out.new/include"
	echo "install-uapi: restored from the build cache ($cache)"
else
	mkdir -p "$out.obj"
	make -s -C "$src" O="$out.obj" ARCH=x86_64 headers_install \
		INSTALL_HDR_PATH="$out.new" >/dev/null
	if [ -n "$cache" ] && mkdir -p "$(dirname "$cache")"; then
		tmp=$(mktemp -d "$(dirname "$cache")/.new.XXXXXX")
		cp -a "$out.new/include" "$tmp/include" && touch "$tmp/.complete"
		rm -rf "$cache" && mv "$tmp" "$cache"
		ls -1dt "$(dirname "$cache")"/*/ | tail -n +9 | xargs -r rm -rf
	fi
fi
if [ -f "$out/.installed" ] && diff -rq "$out.new/include" "$out/include" >/dev/null; then
	rm -rf "$out.new"
	echo "install-uapi: the headers are as installed before"
else
	rm -rf "$out.old"
	[ ! -d "$out" ] || mv "$out" "$out.old"
	mv "$out.new" "$out"
	rm -rf "$out.old"
	touch "$out/.installed"
	echo "install-uapi: $(find "$out/include" -name '*.h' | wc -l) headers in $out/include"
fi
echo "$state" >"$out/.state"

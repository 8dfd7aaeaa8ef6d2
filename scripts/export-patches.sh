#!/usr/bin/env bash
# export-patches.sh - regenerate a patch directory from the commits of a source tree.
#
# Usage: scripts/export-patches.sh qemu|linux SRCDIR PATCHDIR VERSION
#
#   Writes one 'git format-patch' file per commit in pristine..HEAD of SRCDIR and the
#   'series' file naming them in order.  Commit ids are zeroed, subjects are not
#   numbered (adding a patch leaves the other files alone) and no signature is added,
#   so exporting an unchanged tree leaves every file byte-identical.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 4 ] || { echo "usage: $0 qemu|linux SRCDIR PATCHDIR VERSION" >&2; exit 2; }
what=$1 src=$2 patches=$3 version=$4

[ -d "$src/.git" ] || { echo "export: $src is not unpacked yet (make sources)" >&2; exit 1; }
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
	echo "export: $src has uncommitted changes; commit them first" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$src" format-patch -q -N --abbrev=9 --zero-commit --no-signature --no-cover-letter \
	-o "$tmp" pristine..HEAD
(cd "$tmp" && ls -1 -- *.patch 2>/dev/null || true) >"$tmp/series"

mkdir -p "$patches"
changed=0
for f in "$patches"/*.patch; do
	[ -e "$f" ] || continue
	[ -e "$tmp/$(basename "$f")" ] || { rm -f "$f"; changed=1; }
done
for f in "$tmp"/*.patch "$tmp/series"; do
	[ -e "$f" ] || continue
	cmp -s "$f" "$patches/$(basename "$f")" && continue
	cp "$f" "$patches/$(basename "$f")"
	changed=1
done
scripts/sources.sh "$what" "$src" "$patches" "$version" --record
n=$(grep -c . "$patches/series" || true)
if [ $changed -eq 1 ]; then
	echo "export: $patches: $n patches written"
else
	echo "export: $patches: $n patches, unchanged"
fi

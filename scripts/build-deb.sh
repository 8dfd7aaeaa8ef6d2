#!/usr/bin/env bash
# build-deb.sh - finish a binary package whose files are staged in ROOT, and build it.
#
# Usage: scripts/build-deb.sh ROOT OUT.deb
#   ROOT holds the package's files and DEBIAN/ with its maintainer scripts and a control
#   file without Installed-Size; this adds Installed-Size (before Description), the
#   md5sums of every regular file outside DEBIAN/, and runs dpkg-deb (xz, files owned by
#   root).  Used by build-epoch-drbg.sh and build-reseed-notify.sh.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 ROOT OUT.deb" >&2; exit 2; }
root=$1 deb=$2
[ -f "$root/DEBIAN/control" ] || { echo "build-deb: no $root/DEBIAN/control" >&2; exit 2; }

chmod 755 "$root"
size=$(du -sk "$root" | cut -f1)
sed -i "/^Description:/i Installed-Size: $size" "$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
	xargs -0 -r md5sum) >"$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz -b "$root" "$deb" >/dev/null

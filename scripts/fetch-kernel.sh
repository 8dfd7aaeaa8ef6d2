#!/usr/bin/env bash
# fetch-kernel.sh - unpack a prebuilt Debian kernel image without installing it.
#
# Usage: scripts/fetch-kernel.sh PACKAGE OUT-VMLINUZ
#
#   'apt-get download' + 'dpkg-deb -x' into build/: nothing is installed on this machine
#   and its boot configuration is untouched.  When Debian no longer serves PACKAGE, the
#   newest linux-image-6.12.*-cloud-amd64-unsigned is used, with a warning.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 PACKAGE OUT-VMLINUZ" >&2; exit 2; }
pkg=$1 out=$2
work=$(dirname "$out")/pkg
mkdir -p "$work"

if ! apt-cache show "$pkg" >/dev/null 2>&1; then
	newest=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb12-cloud-amd64-unsigned$' |
		cut -d' ' -f1 | sort -V | tail -1)
	[ -n "$newest" ] || { echo "fetch-kernel: Debian offers no $pkg nor any 6.12 cloud image" >&2; exit 1; }
	echo "fetch-kernel: WARNING: $pkg is no longer served; using $newest" >&2
	pkg=$newest
fi
rm -rf "$work" && mkdir -p "$work"
(cd "$work" && apt-get download -qq "$pkg" >/dev/null)
dpkg-deb -x "$work"/*.deb "$work/root"
vmlinuz=$(ls "$work"/root/boot/vmlinuz-* | head -1)
[ -n "$vmlinuz" ] || { echo "fetch-kernel: $pkg has no /boot/vmlinuz" >&2; exit 1; }
cp "$vmlinuz" "$out.tmp" && mv "$out.tmp" "$out"
echo "$pkg" >"$out.package"
rm -rf "$work"

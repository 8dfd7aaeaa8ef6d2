#!/usr/bin/env bash
# fetch-kernel-7.sh - unpack Debian's prebuilt Linux 7 cloud kernel and its ptp_vmclock
# module without installing anything.
#
# Usage: scripts/fetch-kernel-7.sh OUT-DIR
#
#   Linux 7.x's ptp_vmclock exposes VMClock's vm_generation_counter through the read-only
#   mmap of /dev/vmclock0: the peer that snapshot-scenarios/vmclock_peer.py measures.
#   Debian ships it in trixie-backports, which this machine's apt does not know: the
#   script keeps an APT configuration of its own in OUT-DIR/apt (lists, cache, an empty
#   dpkg status), so 'apt-get update' and 'apt-get download' touch nothing of the
#   machine's apt state, and 'dpkg-deb -x' unpacks into OUT-DIR.  Nothing is installed.
#
#   OUT-DIR/vmlinuz            the kernel
#   OUT-DIR/vmlinuz.package    the image package it came from
#   OUT-DIR/modules/*.ko       ptp_vmclock and what it depends on, decompressed (busybox
#                              insmod may not read .ko.xz)
#   OUT-DIR/modules/order      their insmod order, dependencies first
#
#   When trixie-backports no longer serves the pinned version, the newest
#   linux-image-7.*-cloud-amd64 it offers is used, with a warning.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT-DIR" >&2; exit 2; }
out=$1
version=${RESEED_KERNEL7_VERSION:-7.3.4}
flavour=deb13-cloud-amd64
want_modules="ptp_vmclock"
apt=$out/apt work=$out/pkg

mkdir -p "$apt"/{lists/partial,cache/archives/partial,etc/preferences.d,etc/sources.list.d,status}
: >"$apt/status/status"
cat >"$apt/etc/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
EOF
a=$(realpath "$apt")
cat >"$apt/apt.conf" <<EOF
Dir::State "$a";
Dir::State::Lists "$a/lists";
Dir::State::status "$a/status/status";
Dir::Cache "$a/cache";
Dir::Etc::SourceList "$a/etc/sources.list";
Dir::Etc::SourceParts "$a/etc/sources.list.d";
Dir::Etc::Preferences "$a/etc/preferences";
Dir::Etc::PreferencesParts "$a/etc/preferences.d";
EOF
export APT_CONFIG=$a/apt.conf
apt-get update -qq

pkg=linux-image-$version+$flavour
if ! apt-cache show "$pkg" >/dev/null 2>&1; then
	newest=$(apt-cache search --names-only "^linux-image-7\\.[0-9.]+\\+$flavour\$" |
		cut -d' ' -f1 | sort -V | tail -1)
	[ -n "$newest" ] || { echo "fetch-kernel-7: trixie-backports offers no $pkg nor any 7.x cloud image" >&2; exit 1; }
	echo "fetch-kernel-7: WARNING: $pkg is no longer served; using $newest" >&2
	pkg=$newest
fi
# The image package is a meta package: the kernel is in linux-binary-* (the unsigned
# one when offered, as scripts/fetch-kernel.sh takes), the modules in linux-modules-*.
depends=$(apt-cache show --no-all-versions "$pkg" | sed -n 's/^Depends: //p')
binary=$(grep -o 'linux-binary-[^ ,]*' <<<"$depends" | head -1)
modules=$(grep -o 'linux-modules-[^ ,]*' <<<"$depends" | head -1)
[ -n "$binary" ] && [ -n "$modules" ] || {
	echo "fetch-kernel-7: $pkg names no linux-binary-* and linux-modules-* (Depends: $depends)" >&2
	exit 1
}
unsigned=${binary/linux-binary-/linux-binary-unsigned-}
apt-cache show "$unsigned" >/dev/null 2>&1 && binary=$unsigned

rm -rf "$work" && mkdir -p "$work"
# As root, apt's download user cannot write into build/: download as root, no warning.
(cd "$work" && apt-get download -qq -o APT::Sandbox::User=root "$binary" "$modules" >/dev/null)
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done

vmlinuz=$(ls "$work"/root/usr/lib/modules/*/vmlinuz* "$work"/root/boot/vmlinuz-* 2>/dev/null | head -1 || true)
[ -n "$vmlinuz" ] || { echo "fetch-kernel-7: $binary has no vmlinuz" >&2; exit 1; }
moddir=$(ls -d "$work"/root/usr/lib/modules/*/ "$work"/root/lib/modules/*/ 2>/dev/null | head -1 || true)
[ -n "$moddir" ] || { echo "fetch-kernel-7: $modules has no lib/modules/VERSION" >&2; exit 1; }

rm -rf "$out/modules.new"
order=$("$(dirname "$0")/kmod-pick.sh" "$moddir" "$out/modules.new" $want_modules)

rm -rf "$out/modules" && mv "$out/modules.new" "$out/modules"
cp "$vmlinuz" "$out/vmlinuz.tmp" && mv "$out/vmlinuz.tmp" "$out/vmlinuz"
echo "$pkg" >"$out/vmlinuz.package"
rm -rf "$work"
echo "fetch-kernel-7: $pkg: $out/vmlinuz, modules (in order): $order"

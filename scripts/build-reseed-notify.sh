#!/usr/bin/env bash
# build-reseed-notify.sh - the reseed-notify daemon and its Debian package.
#
# Usage: scripts/build-reseed-notify.sh OUT-DIR
#   Builds userspace/reseed-notify/reseed_notify.c into OUT-DIR/reseed-notify and the
#   binary package OUT-DIR/reseed-notify_VERSION_amd64.deb: the daemon in /usr/sbin, its
#   systemd unit (enabled at install), and the empty hooks directory /etc/reseed-notify.d.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUT-DIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/userspace/reseed-notify
version=0.1-1
pkg=reseed-notify

mkdir -p "$out"
gcc -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Wl,-z,relro,-z,now \
	-o "$out/reseed-notify" "$src/reseed_notify.c"

root=$(mktemp -d "$out/.deb.XXXXXX")
trap 'rm -rf "$root"' EXIT
install -d "$root/DEBIAN" "$root/usr/sbin" "$root/usr/lib/systemd/system" \
	"$root/etc/reseed-notify.d" "$root/usr/share/doc/$pkg"
install -m 755 "$out/reseed-notify" "$root/usr/sbin/"
strip --strip-unneeded "$root/usr/sbin/reseed-notify"
install -m 644 "$src/reseed-notify.service" "$root/usr/lib/systemd/system/"
install -m 644 "$src/debian/copyright" "$root/usr/share/doc/$pkg/copyright"
install -m 755 "$src/debian/postinst" "$src/debian/prerm" "$src/debian/postrm" "$root/DEBIAN/"
cat >"$root/DEBIAN/control" <<CONTROL
Package: $pkg
Version: $version
Architecture: amd64
Maintainer: reseed-lab <dev@reseed-lab.invalid>
Depends: libc6 (>= 2.34), init-system-helpers (>= 1.54)
Section: admin
Priority: optional
Description: run hooks when a VM snapshot or clone moved the RNG epoch
 A daemon that waits in poll() on the kernel's RNG epoch (ioctl RNDEPOCH on
 /dev/urandom) and, each time it moves (the machine was snapshotted, restored or
 cloned), runs the hooks in /etc/reseed-notify.d: rotate what no random number
 generator reseeds by itself, such as TLS session-ticket keys ('systemctl reload
 nginx'), VPN session keys or cached identifiers.
CONTROL
"$here/scripts/build-deb.sh" "$root" "$out/${pkg}_${version}_amd64.deb"
echo "build-reseed-notify: $out/${pkg}_${version}_amd64.deb"

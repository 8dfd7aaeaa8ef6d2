#!/usr/bin/env bash
# build-rootfs.sh - a Debian root file system from Debian's archive, for the real guests.
#
# Usage: scripts/build-rootfs.sh SUITE OUT-DIR
#   SUITE is a Debian release (trixie for the 6.12 row, bookworm for the 6.1 row);
#   userspace/debian/SUITE.packages lists what goes in besides the minimal base.
#   Writes OUT-DIR/rootfs.tar (mmdebstrap --variant=minbase, systemd as init) and
#   OUT-DIR/manifest (every installed package and its version, as dpkg has them).
#
#   RESEED_ROOTFS_EXTRA, comma-separated, adds packages (build-cloud-image.sh: Debian's
#   kernel and initramfs-tools).  The build cache: ~/.cache/reseed-lab/rootfs/KEY, keyed
#   by the suite, the packages, the mirror, the masked units and the recipe's version; the
#   six newest stay.
#   The archive moves on under a key (a point release, a security update): the manifest
#   records what a run measured, and RESEED_ROOTFS_REFRESH=1 builds again from today's
#   archive.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 SUITE OUT-DIR" >&2; exit 2; }
suite=$1 out=$2
list=userspace/debian/$suite.packages
[ -f "$list" ] || { echo "build-rootfs: no package list $list for suite '$suite'" >&2; exit 2; }
command -v mmdebstrap >/dev/null || {
	echo "build-rootfs: mmdebstrap is missing (make deps installs it)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || {
	echo "build-rootfs: needs root (mmdebstrap's root mode keeps file owners)" >&2; exit 1; }

mirror=${RESEED_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${RESEED_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
packages=$(sed 's/#.*//' "$list" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
packages=$packages${RESEED_ROOTFS_EXTRA:+,$RESEED_ROOTFS_EXTRA}

# Timers and services a measuring guest does without: they would start work (apt,
# trims, scrubs) at random moments of a run.  logind needs D-Bus, which minbase lacks;
# without them getty-static starts gettys on tty2-tty6, which a guest with a serial
# console only does not use (under TCG they held graphical.target back 25 s).
masked="apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer
	fstrim.timer systemd-tmpfiles-clean.timer systemd-logind.service getty@tty1.service
	getty-static.service"

# The key: what decides the tar.  RECIPE names the mmdebstrap command's form below: change
# it with the command (comments and the caching around it do not re-key).
recipe=2
key=$(echo "$recipe $suite $mirror $security $packages $masked" | md5sum | cut -c1-32)
cache=${RESEED_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab}/rootfs
mkdir -p "$out"
# One build at a time per suite: make check starts one beside the first row's compile.
exec 9>"$out.lock"
flock 9
if [ -z "${RESEED_ROOTFS_REFRESH:-}" ] && [ -f "$cache/$key/.complete" ]; then
	# whole or not at all: make check restores beside a make that may read it
	cp "$cache/$key/rootfs.tar" "$out/.rootfs.tar.tmp"
	cp "$cache/$key/manifest" "$out/"
	mv "$out/.rootfs.tar.tmp" "$out/rootfs.tar"
	echo "build-rootfs: $suite restored from the build cache ($cache/$key)"
	exit 0
fi

tmp=$(mktemp -d "$out/.new.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Documentation and locales are not measured; leaving them out halves the tar.  OpenJDK's
# postinst registers its manual pages with update-alternatives, which fails where
# /usr/share/man/man1 does not exist: the folder stays, empty.
mmdebstrap --variant=minbase --mode=root --include="$packages" \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--essential-hook='mkdir -p "$1/usr/share/man/man1"' \
	--customize-hook="systemctl --root=\"\$1\" mask $(echo $masked)" \
	--customize-hook='echo reseed-guest >"$1/etc/hostname"' \
	--customize-hook="dpkg-query --admindir=\"\$1/var/lib/dpkg\" -W \
		-f='\${Package} \${Version}\n' >$tmp/manifest" \
	"$suite" "$tmp/rootfs.tar" \
	"deb $mirror $suite main" "deb $mirror $suite-updates main" \
	"deb $security $suite-security main"
mv "$tmp/manifest" "$out/"
mv "$tmp/rootfs.tar" "$out/"

if mkdir -p "$cache"; then
	new=$(mktemp -d "$cache/.new.XXXXXX")
	cp "$out/rootfs.tar" "$out/manifest" "$new/"
	touch "$new/.complete"
	rm -rf "${cache:?}/$key"
	mv "$new" "$cache/$key"
	# the six newest stay (two suites, and the image audit's test image)
	ls -1td "$cache"/*/ 2>/dev/null | tail -n +7 | xargs -r rm -rf
fi
echo "build-rootfs: $suite: $(wc -l <"$out/manifest") packages, $(du -h "$out/rootfs.tar" | cut -f1)"

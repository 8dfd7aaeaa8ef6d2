#!/usr/bin/env bash
# build-cloud-image.sh - a Debian disk image with a cloud image's layout, for the image
# audit (make audit IMAGE=...) to be tested on: Debian's own kernel, nothing of ours.
#
# Usage: scripts/build-cloud-image.sh SUITE OUT.raw
#   SUITE is a Debian release (trixie, bookworm).  The image: a GPT disk whose first
#   partition is the root file system (ext4, /boot on it, as Debian's and Ubuntu's cloud
#   images have it), made by mmdebstrap from Debian's archive: systemd as init, Debian's
#   kernel (linux-image-amd64) and its initramfs (initramfs-tools), and the libraries of
#   userspace/debian/SUITE.packages.  Nothing of this tree is in it: the audit brings its
#   measuring programs in on a disk of their own.  OUT.raw is a sparse raw disk (2 GiB,
#   about 0.7 GiB used; qemu-img convert makes the qcow2 an operator has), OUT.raw.manifest
#   lists every package and its version.  Made without loop mounts (mke2fs -d, sfdisk on
#   a file), so it builds beside the compiles at nice 19, before any QEMU exists.  The build
#   cache: ~/.cache/reseed-lab/cloud-image/KEY (the suite, the package lists, the mirror,
#   the recipe's version); the two newest stay.  RESEED_ROOTFS_REFRESH=1 builds again.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 SUITE OUT.raw" >&2; exit 2; }
suite=$1 out=$2
list=userspace/debian/$suite.packages
[ -f "$list" ] || { echo "build-cloud-image: no package list $list for suite '$suite'" >&2; exit 2; }
for tool in mmdebstrap mke2fs sfdisk; do
	command -v $tool >/dev/null || {
		echo "build-cloud-image: $tool is missing (make deps installs it)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || {
	echo "build-cloud-image: needs root (mmdebstrap's root mode keeps file owners)" >&2; exit 1; }

mirror=${RESEED_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${RESEED_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
packages=$(sed 's/#.*//' "$list" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
packages=$packages,linux-image-amd64,initramfs-tools

recipe=3
key=$(echo "$recipe $suite $mirror $security $packages" | md5sum | cut -c1-32)
cache=${RESEED_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab}/cloud-image
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
if [ -z "${RESEED_ROOTFS_REFRESH:-}" ] && [ -f "$cache/$key/.complete" ]; then
	cp --sparse=always "$cache/$key/disk.raw" "$out.tmp"
	cp "$cache/$key/manifest" "$out.manifest"
	mv "$out.tmp" "$out"
	echo "build-cloud-image: $suite restored from the build cache ($cache/$key)"
	exit 0
fi

work=$(mktemp -d "$(dirname "$out")/.cloud.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The kernel's postinst makes the initramfs in the chroot (initramfs-tools, MODULES=most:
# every storage driver, as on a cloud image that boots on any hypervisor).
mmdebstrap --variant=minbase --mode=root --include="$packages" \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--essential-hook='mkdir -p "$1/usr/share/man/man1"' \
	--customize-hook='echo debian-cloud >"$1/etc/hostname"' \
	--customize-hook="dpkg-query --admindir=\"\$1/var/lib/dpkg\" -W \
		-f='\${Package} \${Version}\n' >$work/manifest" \
	"$suite" "$work/rootfs.tar" \
	"deb $mirror $suite main" "deb $mirror $suite-updates main" \
	"deb $security $suite-security main"

root=$work/root
mkdir "$root"
tar -xpf "$work/rootfs.tar" -C "$root" --numeric-owner
rm "$work/rootfs.tar"
ls "$root"/boot/vmlinuz-* "$root"/boot/initrd.img-* >/dev/null || {
	echo "build-cloud-image: no kernel or initramfs in /boot" >&2; exit 1; }
uuid=$(cat /proc/sys/kernel/random/uuid)
echo "UUID=$uuid / ext4 rw,errors=remount-ro 0 1" >"$root/etc/fstab"

# The disk: 1 MiB for the GPT, then the root partition (2 GiB, sparse)
mke2fs -q -t ext4 -L root -U "$uuid" -d "$root" "$work/root.ext4" 2G
rm -rf "$root"
rm -f "$out.tmp"
truncate -s $((2048 + 2 + 1))M "$out.tmp"
printf 'label: gpt\nstart=2048, size=%d, type=linux, name=root\n' $((2048 * 2048)) |
	sfdisk -q "$out.tmp"
dd if="$work/root.ext4" of="$out.tmp" bs=1M seek=1 conv=notrunc,sparse status=none
mv "$work/manifest" "$out.manifest"
mv "$out.tmp" "$out"

if mkdir -p "$cache"; then
	new=$(mktemp -d "$cache/.new.XXXXXX")
	cp --sparse=always "$out" "$new/disk.raw"
	cp "$out.manifest" "$new/manifest"
	touch "$new/.complete"
	rm -rf "${cache:?}/$key"
	mv "$new" "$cache/$key"
	ls -1td "$cache"/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
fi
echo "build-cloud-image: $out ($(du -h "$out" | cut -f1) used," \
	"$(grep -c . "$out.manifest") packages, kernel $(grep '^linux-image-[0-9]' "$out.manifest"))"

#!/usr/bin/env bash
# build-cloud-image.sh - a Debian disk image with a cloud image's layout, for the image
# audit (make audit IMAGE=...) to be tested on: Debian's own kernel, nothing of ours.
#
# Usage: scripts/build-cloud-image.sh SUITE OUT.raw
#   SUITE is a Debian release (trixie, bookworm).  The image: a GPT disk whose first
#   partition is the root file system (ext4, /boot on it, as Debian's and Ubuntu's cloud
#   images have it): build-rootfs.sh's root file system of SUITE (systemd as init, the
#   libraries of userspace/debian/SUITE.packages, the same timers masked) with Debian's
#   kernel (linux-image-amd64) and its initramfs (initramfs-tools, made by the kernel's
#   postinst in the chroot, MODULES=most as a cloud image has it).  Nothing of this tree
#   is in it: the audit brings its measuring programs in on a disk of their own.
#   OUT.raw is a sparse raw disk (2 GiB, about 0.5 GiB used; qemu-img convert makes the
#   qcow2 an operator has), OUT.raw.manifest lists every package and its version.  Made
#   without loop mounts (mke2fs -d, sfdisk on a file) and without QEMU, so it builds
#   beside the compiles at nice 19.  The root file system is cached as build-rootfs.sh
#   caches (RESEED_ROOTFS_REFRESH=1 builds it again); the disk is made from it in seconds.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 SUITE OUT.raw" >&2; exit 2; }
suite=$1 out=$2
for tool in mke2fs sfdisk; do
	command -v $tool >/dev/null || {
		echo "build-cloud-image: $tool is missing (make deps installs it)" >&2; exit 1; }
done
here=$(cd "$(dirname "$0")/.." && pwd)

mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
RESEED_ROOTFS_EXTRA=linux-image-amd64,initramfs-tools \
	"$here/scripts/build-rootfs.sh" "$suite" "$(dirname "$out")/rootfs"

work=$(mktemp -d "$(dirname "$out")/.cloud.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir "$root"
tar -xpf "$(dirname "$out")/rootfs/rootfs.tar" -C "$root" --numeric-owner
ls "$root"/boot/vmlinuz-* "$root"/boot/initrd.img-* >/dev/null || {
	echo "build-cloud-image: no kernel or initramfs in /boot" >&2; exit 1; }
echo debian-cloud >"$root/etc/hostname"
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
cp "$(dirname "$out")/rootfs/manifest" "$out.manifest"
mv "$out.tmp" "$out"
echo "build-cloud-image: $out ($(du -h "$out" | cut -f1) used," \
	"$(grep -c . "$out.manifest") packages, kernel $(grep '^linux-image-[0-9]' "$out.manifest"))"

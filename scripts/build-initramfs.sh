#!/usr/bin/env bash
# build-initramfs.sh - pack the guest initramfs: busybox-static, guest/init and the tests.
#
# Usage: scripts/build-initramfs.sh LINUX-SRCDIR OUT.cpio.gz TEST-BINARY... [MODULE.ko...]
#
#   A file whose name ends in .ko goes to /modules/ instead of /tests/, and guest/init
#   loads those modules in the order given here (/modules/order) before the tests.
#
#   Uses the kernel's own usr/gen_init_cpio, so /dev/console exists without root tricks.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 LINUX-SRCDIR OUT.cpio.gz TEST-BINARY..." >&2; exit 2; }
src=$1 out=$2
shift 2
busybox=/bin/busybox
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q "ok installed" && [ -x "$busybox" ] || {
	echo "build-initramfs: $busybox is not a static busybox (package busybox-static)" >&2
	exit 1
}

work=$(dirname "$out")/initramfs.d
mkdir -p "$work"
gen=$work/gen_init_cpio
[ "$gen" -nt "$src/usr/gen_init_cpio.c" ] || gcc -O2 -o "$gen" "$src/usr/gen_init_cpio.c"

list=$work/list
{
	echo "dir /dev 755 0 0"
	echo "nod /dev/console 600 0 0 c 5 1"
	for d in /bin /sbin /proc /sys /tmp /etc /tests /root; do echo "dir $d 755 0 0"; done
	echo "file /bin/busybox $busybox 755 0 0"
	echo "file /init $(pwd)/guest/init 755 0 0"
	modules=()
	for t in "$@"; do
		case "$t" in
		*.ko) modules+=("$t") ;;
		*) echo "file /tests/$(basename "$t") $(realpath "$t") 755 0 0" ;;
		esac
	done
	if [ ${#modules[@]} -gt 0 ]; then
		echo "dir /modules 755 0 0"
		for m in "${modules[@]}"; do
			echo "file /modules/$(basename "$m") $(realpath "$m") 644 0 0"
			basename "$m" >&3
		done
		echo "file /modules/order $(realpath "$work")/modules.order 644 0 0"
	fi
} >"$list.new" 3>"$work/modules.order"
"$gen" "$list.new" | gzip -n -1 >"$out.tmp"
mv "$list.new" "$list"
mv "$out.tmp" "$out"

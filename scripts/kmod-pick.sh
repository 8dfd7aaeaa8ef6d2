#!/usr/bin/env bash
# kmod-pick.sh - copy kernel modules and what they depend on out of a modules directory,
# decompressed, with the order to load them in.
#
# Usage: scripts/kmod-pick.sh [--optional] MODULES-DIR OUT-DIR MODULE...
#
#   MODULES-DIR is a kernel's lib/modules/VERSION (an unpacked linux-modules or
#   linux-image package, or /lib/modules/$(uname -r) of the operator's own machine).
#   OUT-DIR/NAME.ko gets each module and its dependencies, decompressed (busybox insmod
#   may not read .ko.xz or .ko.zst), and OUT-DIR/order their insmod order, dependencies
#   first: what scripts/build-initramfs.sh and guest/init take.  A module built into the
#   kernel (modules.builtin) needs nothing.  A module the directory lacks is an error,
#   unless --optional: then it is left out and named on stderr ("absent: NAME"), for the
#   audit, where a driver the kernel does not have is a finding, not a failure.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
optional=
[ "${1:-}" = --optional ] && { optional=1; shift; }
[ $# -ge 3 ] || { echo "usage: $0 [--optional] MODULES-DIR OUT-DIR MODULE..." >&2; exit 2; }
moddir=${1%/} out=$2
shift 2
[ -d "$moddir" ] || { echo "kmod-pick: $moddir is not a directory" >&2; exit 1; }

# A module's path under moddir (compressed or not), by name; '-' and '_' are one.
module_path() {
	find "$moddir" -name '*.ko*' | grep -E "/$(sed 's/[-_]/[-_]/g' <<<"$1")\.ko(\.[a-z]+)?\$" |
		head -1 || true
}
# What it depends on: its modules.dep line when the directory has one (Debian makes it
# at install time), else the depends= of its .modinfo (in the decompressed KO), which is
# what depmod reads too.
module_depends() {
	local path=$1 ko=$2 rel
	if [ -f "$moddir/modules.dep" ]; then
		rel=${path#"$moddir/"}
		sed -n "s|^$rel: *||p" "$moddir/modules.dep" | xargs -rn1 basename |
			sed -E 's/\.ko(\.[a-z]+)?$//'
	else
		objcopy -O binary --only-section=.modinfo "$ko" "$ko.modinfo"
		tr '\0' '\n' <"$ko.modinfo" | sed -n 's/^depends=//p' | tr ',' '\n' | sed '/^$/d'
		rm -f "$ko.modinfo"
	fi
}
decompress() {
	case "$1" in
	*.xz) xz -dc "$1" ;;
	*.zst) zstd -qdc "$1" ;;
	*.gz) gzip -dc "$1" ;;
	*) cat "$1" ;;
	esac
}
builtin() {
	grep -qE "/$(sed 's/[-_]/[-_]/g' <<<"$1")\.ko\$" "$moddir/modules.builtin" 2>/dev/null
}

mkdir -p "$out"
rm -f "$out"/*.ko "$out/order"
order=()
add_module() {
	local name=$1 want=$2 path dep m
	for m in "${order[@]}"; do [ "$m" = "$name" ] && return; done
	path=$(module_path "$name")
	if [ -z "$path" ]; then
		builtin "$name" && return
		if [ -n "$optional" ] && [ "$want" = top ]; then
			echo "absent: $name" >&2
			return
		fi
		echo "kmod-pick: $moddir has no module $name" >&2
		exit 1
	fi
	decompress "$path" >"$out/$name.ko"
	for dep in $(module_depends "$path" "$out/$name.ko"); do add_module "$dep" dep; done
	order+=("$name")
}
for m in "$@"; do add_module "$m" top; done
if [ ${#order[@]} -gt 0 ]; then
	printf '%s.ko\n' "${order[@]}" >"$out/order"
else
	: >"$out/order"
fi
echo "${order[*]}"

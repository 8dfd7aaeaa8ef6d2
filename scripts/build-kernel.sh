#!/usr/bin/env bash
# build-kernel.sh - configure and build the guest kernel (bzImage) with ccache.
#
# Usage: scripts/build-kernel.sh SRCDIR OBJDIR FRAGMENT...
#
#   The configuration is tinyconfig plus the fragments; it is made again only when a
#   fragment changed, and every option a fragment sets must survive olddefconfig, or the
#   build stops and names it.  Timestamps and build identity are fixed so that ccache
#   hits across rebuilds of the same sources.
#
#   The build cache: what the tree needs of a build (bzImage, .config, System.map, the
#   vDSO image) is kept under RESEED_BUILD_CACHE (default
#   ~/.cache/reseed-lab/kernel), keyed by the source tree's exact state, the fragments,
#   this script and the compiler.  A fresh clone whose key is there restores it instead
#   of building (ccache for the whole build: even with every object a ccache hit, kbuild
#   takes minutes).  RESEED_BUILD_CACHE= (empty) turns it off.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 SRCDIR OBJDIR FRAGMENT..." >&2; exit 2; }
src=$(realpath "$1") obj=$(realpath -m "$2")
shift 2
frags=()
for f in "$@"; do frags+=("$(realpath "$f")"); done

# ccache keyed on paths relative to the tree's top, and not on the working directory
# (QEMU builds with -g): a fresh clone in another folder, as CI makes, hits the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
cc=gcc
command -v ccache >/dev/null && cc="ccache gcc"
export KBUILD_BUILD_TIMESTAMP="2000-01-01" KBUILD_BUILD_USER=reseed KBUILD_BUILD_HOST=reseed-lab
kmake() { make -s -C "$src" O="$obj" CC="$cc" "$@"; }

mkdir -p "$obj"
# One build at a time in an object directory: two make runs there break each other.
exec 9>"$obj.lock"
flock 9

# What a build leaves that the tree uses (the uapi headers: scripts/install-uapi.sh).
kept=(arch/x86/boot/bzImage .config .reseed-config System.map arch/x86/entry/vdso/vdso64.so.dbg)
cache=${RESEED_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/kernel}
state=$("$(dirname "$0")/tree-state.sh" "$src" "${frags[@]}")
key=$(printf '%s\n' "$state" "$(sha256sum <"$0")" "$(gcc --version | head -1)" |
	sha256sum | cut -c1-32)
if [ -n "$cache" ] && [ -f "$cache/$key/.complete" ] &&
	[ "$(cat "$obj/.reseed-built" 2>/dev/null)" != "$state" ]; then
	for f in "${kept[@]}"; do
		[ -e "$cache/$key/$f" ] || continue
		mkdir -p "$(dirname "$obj/$f")"
		cp -p "$cache/$key/$f" "$obj/$f"
	done
	echo "$state" >"$obj/.reseed-built"
	touch "$cache/$key/.complete"
	echo "build-kernel: restored from the build cache ($cache/$key)"
	exit 0
fi

# RESEED_KCONFIG_LAX=1 (build-each-patch.sh): the fragments are merged again for every
# build, and an option that does not survive is reported, not fatal: at a commit before
# the one that adds it (or before the one that selects a hidden option, as configfs-tsm's
# TSM_REPORTS before sev-guest selects it) the tree cannot have it yet.
sum=$(cat "${frags[@]}" | sha256sum | cut -d' ' -f1)
if [ -n "${RESEED_KCONFIG_LAX:-}" ] || [ ! -f "$obj/.config" ] ||
	[ "$(cat "$obj/.reseed-config" 2>/dev/null)" != "$sum" ]; then
	kmake tinyconfig >/dev/null
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}" >/dev/null
	kmake olddefconfig >/dev/null
	bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=n) want="# ${line%=n} is not set" ;;
		CONFIG_*) want=$line ;;
		*) continue ;;
		esac
		if grep -qxF "$want" "$obj/.config"; then
			continue
		fi
		if [ -n "${RESEED_KCONFIG_LAX:-}" ]; then
			echo "build-kernel: $line is not in this tree, or not settable, at this commit"
			continue
		fi
		echo "build-kernel: $line from the fragment did not survive olddefconfig" >&2
		bad=1
	done < <(cat "${frags[@]}")
	[ $bad -eq 0 ] || exit 1
	echo "$sum" >"$obj/.reseed-config"
fi

if [ -f "$obj/arch/x86/boot/bzImage" ] && [ "$(cat "$obj/.reseed-built" 2>/dev/null)" = "$state" ]; then
	echo "build-kernel: $src unchanged since the last build"
	exit 0
fi
kmake -j"$(nproc)" bzImage
echo "$state" >"$obj/.reseed-built"

# Into the build cache, whole or not at all; the six newest builds stay.
if [ -n "$cache" ] && mkdir -p "$cache"; then
	tmp=$(mktemp -d "$cache/.new.XXXXXX")
	for f in "${kept[@]}"; do
		[ -e "$obj/$f" ] || continue
		mkdir -p "$(dirname "$tmp/$f")"
		cp -p "$obj/$f" "$tmp/$f"
	done
	touch "$tmp/.complete"
	rm -rf "${cache:?}/$key"
	mv "$tmp" "$cache/$key"
	ls -1dt "$cache"/*/ | tail -n +7 | xargs -r rm -rf
fi

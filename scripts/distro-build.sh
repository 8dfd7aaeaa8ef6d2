#!/usr/bin/env bash
# distro-build.sh - compile what each patch of a row's kernel series touches, under
# Debian's own configuration of that kernel, at every commit of the series.
#
# Usage: scripts/distro-build.sh SRCDIR LINUX-DEB-VERSION TAP
#
#   The guest kernel is tinyconfig plus our fragments: code under an option that the
#   fragments leave off (CONFIG_KVM_GUEST, a module build, ACPI pieces) is never
#   compiled by 'make kernel' or by build-each-patch.sh.  A distribution builds the
#   same files with nearly everything on.  This stage takes Debian's amd64 configuration
#   of the row's kernel (package linux-config-X.Y of the same version as the source),
#   turns on every option the series adds (as a module where it can be one), and at
#   each commit of pristine..HEAD compiles the C files that commit touches.  A commit
#   fails when its objects do not compile, or when the compiler warns in a file the
#   commit touches; an option of the series that Debian's configuration cannot take
#   (a dependency it lacks) is named in the TAP line.  KUnit, which Debian leaves off,
#   is turned on for the series' KUnit tests.  Kbuild's single-object targets are used
#   (make O=... dir/file.o), after one 'make prepare'; the worktree and the object
#   directory are build/distro/src/NAME and build/distro/NAME.
#
#   The result is cached under RESEED_BUILD_CACHE's parent (~/.cache/reseed-lab/distro),
#   keyed by every commit's tree, the configuration package, this script and the
#   compiler: a fresh clone of an unchanged series reports the cached lines, marked so.
#   RESEED_BUILD_CACHE= (empty) turns it off.
set -euo pipefail
# Only a whole result is cached: its plan, and as many results as it plans (a results
# folder removed while this ran leaves a file with the later lines only).
complete() {
	local plan
	plan=$(sed -n '1s/^1\.\.\([0-9][0-9]*\)$/\1/p' "$1")
	[ -n "$plan" ] && [ "$(grep -cE '^(ok|not ok) ' "$1")" -eq "$plan" ]
}

usage() { echo "usage: $0 SRCDIR LINUX-DEB-VERSION TAP" >&2; exit "${1:-2}"; }
case "${1:-}" in -h|--help) usage 0 2>&1 ;; esac
[ $# -eq 3 ] || usage
src=$(realpath "$1") version=$2 tap=$3
name=$(basename "$src")
top=$(pwd)
work=$top/build/distro/src/$name obj=$top/build/distro/$name
base=${version%%-*}
base=${base%.*}
pkg=linux-config-$base

# Debian's configuration, from the package of the same version as the source.
dl=$top/build/dl/$pkg-$version
config=$dl/usr/src/$pkg/config.amd64_none_amd64.xz
if [ ! -f "$config" ]; then
	rm -rf "$dl" "$dl.tmp" && mkdir -p "$dl.tmp"
	(cd "$dl.tmp" && apt-get download -qq "$pkg=$version" >/dev/null 2>&1) || {
		echo "distro-build: 'apt-get download $pkg=$version' failed" >&2
		exit 1
	}
	dpkg-deb -x "$dl.tmp"/*.deb "$dl.tmp"
	mv "$dl.tmp" "$dl"
fi

mapfile -t commits < <(git -C "$src" rev-list --reverse pristine..HEAD)
cache=${RESEED_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/kernel}
[ -z "$cache" ] || cache=$(dirname "$cache")/distro
key=$({ for c in "${commits[@]}"; do git -C "$src" rev-parse "$c^{tree}"; done
	sha256sum <"$config"; sha256sum <"$0"; gcc --version | head -1; } |
	sha256sum | cut -c1-32)
mkdir -p "$(dirname "$tap")"
if [ -n "$cache" ] && [ -f "$cache/$key.tap" ]; then
	sed 's/^\(ok\|not ok\) \([0-9]*\) - \(.*\)$/\1 \2 - \3 [cached: this series compiled here before]/' \
		"$cache/$key.tap" >"$tap"
	cat "$tap"
	exit 0
fi

cc=gcc
command -v ccache >/dev/null && cc="ccache gcc"
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$top} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export KBUILD_BUILD_TIMESTAMP="2000-01-01" KBUILD_BUILD_USER=reseed KBUILD_BUILD_HOST=reseed-lab
kmake() { make -s -C "$work" O="$obj" CC="$cc" "$@"; }

mkdir -p "$(dirname "$work")" "$obj"
exec 9>"$obj.lock"
flock 9
git -C "$src" worktree prune
[ -d "$work" ] || git -C "$src" worktree add -q --detach "$work" pristine
git -C "$work" checkout -q --detach pristine

# Every option the series adds, on: as a module where it is tristate.
mapfile -t added < <(git -C "$src" diff pristine..HEAD -- '*Kconfig*' |
	sed -n 's/^+\(menu\)\?config \([A-Z0-9_]*\)$/\2/p' | sort -u)
configure() {
	local sym
	xz -dc "$config" >"$obj/.config"
	# The series' KUnit tests are among what it adds; Debian builds no KUnit.
	"$work/scripts/config" --file "$obj/.config" --enable KUNIT
	kmake olddefconfig >/dev/null 2>&1
	for sym in "${added[@]}"; do
		grep -q "^config $sym\$" -r --include='Kconfig*' "$work" || continue
		"$work/scripts/config" --file "$obj/.config" --module "$sym"
	done
	kmake olddefconfig >/dev/null 2>&1
	for sym in "${added[@]}"; do
		grep -q "^config $sym\$" -r --include='Kconfig*' "$work" || continue
		grep -q "^CONFIG_$sym=[ym]" "$obj/.config" ||
			"$work/scripts/config" --file "$obj/.config" --enable "$sym"
	done
	kmake olddefconfig >/dev/null 2>&1
	# An option that needs another built in ('depends on HW_RANDOM_VIRTIO=y', as a KUnit
	# test that its driver #includes does): that one built in, then the option.
	local deps
	for sym in "${added[@]}"; do
		grep -q "^CONFIG_$sym=[ym]" "$obj/.config" && continue
		deps=$(grep -rh -A12 "^config $sym\$" --include='Kconfig*' "$work" |
			sed -n '2,$p' | sed '/^\(config\|menuconfig\|endmenu\|if\|endif\)/,$d' |
			grep -oE '\b[A-Z0-9_]+=y\b' | sed 's/=y$//' | sort -u || true)
		for d in $deps; do "$work/scripts/config" --file "$obj/.config" --enable "$d"; done
		[ -z "$deps" ] || "$work/scripts/config" --file "$obj/.config" --enable "$sym"
	done
	kmake olddefconfig >/dev/null 2>&1
	off=()
	for sym in "${added[@]}"; do
		grep -q "^config $sym\$" -r --include='Kconfig*' "$work" || continue
		grep -q "^CONFIG_$sym=[ym]" "$obj/.config" || off+=("CONFIG_$sym")
	done
}

log=$obj.log
: >"$log"
out=$(mktemp)
trap 'rm -f "$out" "$out.warn"' EXIT
echo "1..${#commits[@]}" | tee "$tap.new"
n=0 failed=0 prepared= said=
for c in "${commits[@]}"; do
	n=$((n + 1))
	subject=$(git -C "$src" log -1 --format=%s "$c")
	git -C "$work" checkout -q --detach "$c"
	# The C files of the kernel proper that this commit adds or changes.
	mapfile -t files < <(git -C "$work" diff-tree --no-commit-id --name-only --diff-filter=AM \
		-r "$c" -- '*.c' | grep -vE '^(tools|scripts|samples|Documentation|usr)/' || true)
	if [ -z "$prepared" ] || git -C "$work" diff-tree --no-commit-id --name-only -r "$c" |
		grep -q 'Kconfig'; then
		configure
		if [ -z "$prepared" ]; then
			echo "# distro-build: make prepare under Debian's $pkg $version" \
				"(config.amd64_none_amd64)" >>"$log"
			kmake -j"$(nproc)" prepare >>"$log" 2>&1 || {
				echo "not ok $n - $subject (make prepare failed under Debian's" \
					"configuration: $log)" | tee -a "$tap.new"
				failed=$((failed + 1))
				continue
			}
			prepared=1
		fi
	fi
	if [ "${off[*]}" != "$said" ]; then
		echo "# from here on, options of the series that Debian's configuration cannot" \
			"take (a dependency it lacks): ${off[*]:-none}" | tee -a "$tap.new"
		said=${off[*]}
	fi
	if [ ${#files[@]} -eq 0 ]; then
		echo "ok $n - $subject # SKIP it changes no C file of the kernel" | tee -a "$tap.new"
		continue
	fi
	# Files that are not objects of their own: the vDSO's getrandom() is compiled
	# through arch/x86/entry/vdso/vgetrandom.c, and vdso2c is the host program that
	# makes the vDSO image.
	# A KUnit test that its driver #includes (random_epoch_kunit.c, tsm_kunit.c) is
	# compiled as part of that driver's object.
	objs=()
	for f in "${files[@]}"; do
		case "$f" in
		lib/vdso/getrandom.c) objs+=(arch/x86/entry/vdso/vgetrandom.o) ;;
		arch/x86/entry/vdso/vdso2c.c) objs+=(arch/x86/entry/vdso/vdso-image-64.o) ;;
		*)
			inc=$(cd "$work" && grep -l "^#include \"${f##*/}\"" "${f%/*}"/*.c 2>/dev/null |
				head -1 || true)
			objs+=("${inc:-$f}")
			objs[-1]=${objs[-1]%.c}.o
			;;
		esac
	done
	mapfile -t objs < <(printf '%s\n' "${objs[@]}" | sort -u)
	for o in "${objs[@]}"; do rm -f "$obj/$o"; done
	rc=0
	kmake -k -j"$(nproc)" "${objs[@]}" >"$out" 2>&1 || rc=$?
	{ echo "# distro-build: $c $subject"; cat "$out"; } >>"$log"
	built=() absent=()
	for o in "${objs[@]}"; do
		if [ -f "$obj/$o" ]; then built+=("$o"); else absent+=("$o"); fi
	done
	# Warnings in the files this commit touches (not in headers it only includes).
	grep -E "(^|/)($(printf '%s|' "${files[@]}" | sed 's/[.]/[.]/g; s/|$//')):[0-9]+:[0-9]+: (warning|error):" \
		"$out" >"$out.warn" || true
	note=
	[ ${#absent[@]} -eq 0 ] || note="; not built: ${absent[*]}"
	if [ $rc -ne 0 ] && grep -qE ': error:|Error [0-9]' "$out"; then
		echo "not ok $n - $subject: does not compile under Debian's configuration$note" |
			tee -a "$tap.new"
		{ grep -E 'error|warning' "$out" | grep -v 'not remade' | sed 's/^/#   /' |
			head -20 || true; } |
			tee -a "$tap.new"
		failed=$((failed + 1))
	elif [ -s "$out.warn" ]; then
		echo "not ok $n - $subject: compiler warnings under Debian's configuration$note" |
			tee -a "$tap.new"
		{ sed 's/^/#   /' "$out.warn" | head -20 || true; } | tee -a "$tap.new"
		failed=$((failed + 1))
	elif [ ${#absent[@]} -ne 0 ]; then
		echo "not ok $n - $subject: make built no object for ${absent[*]}$note" |
			tee -a "$tap.new"
		failed=$((failed + 1))
	else
		echo "ok $n - $subject (${built[*]})$note" | tee -a "$tap.new"
	fi
done
mv "$tap.new" "$tap"
if [ $failed -eq 0 ] && complete "$tap" && [ -n "$cache" ] && mkdir -p "$cache"; then
	cp "$tap" "$cache/$key.tap.tmp" && mv "$cache/$key.tap.tmp" "$cache/$key.tap"
fi
[ $failed -eq 0 ]

#!/usr/bin/env bash
# build-qemu.sh - configure (once) and build the minimal reseed-lab QEMU with ccache.
#
# Usage: scripts/build-qemu.sh SRCDIR OBJDIR [MESON-DEB-VERSION [NINJA-TARGET...]]
#
#   Builds qemu-system-x86_64 and qemu-img (x86_64-softmmu only, KVM and TCG, the device
#   set of qemu-patches/reseed-lab-devices.mak) in OBJDIR, the x86 option ROMs that
#   -kernel boot needs, and puts them with SeaBIOS into OBJDIR/pc-bios, where QEMU and
#   its qtests look for firmware.  Extra arguments are further ninja targets.
#
#   QEMU 8 and later configure through a Python venv and need meson >= 1.5, which
#   Debian 12 lacks: that Debian package, version MESON-DEB-VERSION (bookworm-backports),
#   is unpacked into build/tools/ (not installed) and put on PYTHONPATH for configure
#   and for every ninja run, which may re-run meson.
#
#   It also builds the qtest binaries the tree runs (scripts/check-qtest.sh, bench.sh).
#
#   The build cache: those binaries are kept under RESEED_BUILD_CACHE (default
#   ~/.cache/reseed-lab/qemu), keyed by the source tree's exact state, the configure
#   arguments, the device set, this script, the compiler and the libraries QEMU links.
#   A fresh clone (a build directory that was never configured) whose key is there
#   restores them instead of configuring and building: even with every object a ccache
#   hit, configure, meson and the links take one to two minutes.  Such a directory has
#   no build.ninja; the scripts that run ninja there use the binaries as they are, and
#   the first change to the tree configures and builds it for real.
#   RESEED_BUILD_CACHE= (empty) turns it off, as it does the kernel's.
#   RESEED_QEMU_SANITIZE=1 or RESEED_QEMU_FUZZ=1: one build for both, with Debian's
#   clang, ASan, UBSan and --enable-fuzzing: the same binaries and qtests, instrumented,
#   and beside them QEMU's libFuzzer target qemu-fuzz-x86_64 (docs/devel/testing/
#   fuzzing.rst; scripts/fuzz.sh), as QEMU's own CI job build-oss-fuzz builds and tests
#   it.  Two builds, GCC's sanitizers and clang's fuzzer, cost one more QEMU compile.
#   RESEED_QEMU_FUZZ=coverage builds the fuzz target alone, with clang's source-based
#   coverage and no sanitizer, to replay a corpus and count the lines it reached.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 SRCDIR OBJDIR [MESON-DEB-VERSION [NINJA-TARGET...]]" >&2; exit 2; }
src=$(realpath "$1") obj=$2 meson_version=${3:-}
shift $(($# >= 3 ? 3 : 2))
top=$(pwd)

major=$(cut -d. -f1 "$src/VERSION")
extra_config=()
if [ "$major" -ge 8 ]; then
	[ -n "$meson_version" ] || { echo "build-qemu: QEMU $major needs MESON-DEB-VERSION" >&2; exit 2; }
	meson=$top/build/tools/meson-$meson_version
	if [ ! -d "$meson/usr/lib/python3/dist-packages/mesonbuild" ]; then
		rm -rf "$meson" "$meson.dl" && mkdir -p "$meson.dl"
		(cd "$meson.dl" && apt-get download -qq "meson=$meson_version" >/dev/null 2>&1) || {
			echo "build-qemu: 'apt-get download meson=$meson_version' failed" \
			     "(bookworm-backports: run 'make deps')" >&2
			exit 1
		}
		dpkg-deb -x "$meson.dl"/meson_*.deb "$meson"
		rm -rf "$meson.dl"
	fi
	export PYTHONPATH=$meson/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
	# The +ds tarball has no python/wheels and no firmware blobs.
	extra_config=(--python=/usr/bin/python3 --disable-install-blobs)
fi

# RESEED_QEMU_SANITIZE=1 (make SANITIZE=1, make check-asan) and RESEED_QEMU_FUZZ=1
# (make fuzz-build): AddressSanitizer, UndefinedBehaviorSanitizer and the fuzzer's
# coverage instrumentation, in an object directory of its own (the Makefile's).  QEMU 9
# and later have one switch each; QEMU 7.2's --enable-sanitizers is both.
fuzz=${RESEED_QEMU_FUZZ:-}
[ -z "${RESEED_QEMU_SANITIZE:-}" ] || [ -n "$fuzz" ] || fuzz=1
if [ -n "$fuzz" ]; then
	extra_config+=(--enable-fuzzing)
	if [ "$fuzz" = coverage ]; then
		extra_config+=("--extra-cflags=-fprofile-instr-generate -fcoverage-mapping"
			--extra-ldflags=-fprofile-instr-generate)
	elif [ "$major" -ge 9 ]; then
		extra_config+=(--enable-asan --enable-ubsan)
	else
		extra_config+=(--enable-sanitizers)
	fi
fi

devices=configs/devices/x86_64-softmmu/reseed-lab.mak
cmp -s "$top/qemu-patches/reseed-lab-devices.mak" "$src/$devices" ||
	cp "$top/qemu-patches/reseed-lab-devices.mak" "$src/$devices"
grep -qxF "$devices" "$src/.git/info/exclude" || echo "$devices" >>"$src/.git/info/exclude"

# ccache keyed on paths relative to the tree's top, and not on the working directory
# (QEMU builds with -g): a fresh clone in another folder, as CI makes, hits the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
cc=gcc cxx=g++
[ -z "$fuzz" ] || cc=clang cxx=clang++
[ -x "/usr/lib/ccache/$cc" ] && cc=/usr/lib/ccache/$cc cxx=/usr/lib/ccache/$cxx
config=(
	--target-list=x86_64-softmmu
	--without-default-features --without-default-devices
	--with-devices-x86_64=reseed-lab
	--enable-kvm --enable-tcg --enable-tools --enable-fdt=system
	--enable-gnutls --enable-nettle
	--disable-docs --disable-werror
	--cc="$cc" --cxx="$cxx" --host-cc="$cc"
	${extra_config[@]+"${extra_config[@]}"}
)
mkdir -p "$obj"
# One build at a time in a build directory.
exec 9>"$obj.lock"
flock 9

# What the tree runs of a build; 7.2 has no vmclock device and no vmclock-test.
qtests=(tests/qtest/qos-test tests/qtest/sev-snp-responder-test)
[ ! -f "$src/tests/qtest/vmclock-test.c" ] || qtests+=(tests/qtest/vmclock-test)
targets=(qemu-system-x86_64 qemu-img "${qtests[@]}")
case $fuzz in
coverage) targets=(qemu-fuzz-x86_64) ;;
?*) targets+=(qemu-fuzz-x86_64) ;;
esac
kept=("${targets[@]}" qemu-bundle/usr/local/share/qemu/keymaps)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/qemu
[ -n "${RESEED_BUILD_CACHE-on}" ] || cache=
libs=$(dpkg-query -W -f '${Package}=${Version}\n' libglib2.0-dev libgnutls28-dev \
	nettle-dev libpixman-1-dev libfdt-dev zlib1g-dev 2>/dev/null || true)
state=$("$(dirname "$0")/tree-state.sh" "$src" "$top/qemu-patches/reseed-lab-devices.mak")
key=$(printf '%s\n' "$state" "${config[*]}" "$meson_version" "$(sha256sum <"$0")" \
	"$("${cc##*/}" --version | head -1)" "$libs" | sha256sum | cut -c1-32)
# A build directory that was never configured takes the binaries from the cache.
if [ -n "$cache" ] && [ -f "$cache/$key/.complete" ] && [ ! -f "$obj/build.ninja" ]; then
	if [ "$(cat "$obj/.reseed-built" 2>/dev/null)" != "$state" ]; then
		for f in "${kept[@]}"; do
			[ -e "$cache/$key/$f" ] || continue
			mkdir -p "$(dirname "$obj/$f")"
			rm -rf "${obj:?}/$f"
			cp -a "$cache/$key/$f" "$obj/$f"
		done
		echo "$state" >"$obj/.reseed-built"
		touch "$cache/$key/.complete"
		echo "build-qemu: restored from the build cache ($cache/$key)"
	fi
else
	if [ ! -f "$obj/build.ninja" ] ||
		[ "$(cat "$obj/.reseed-config" 2>/dev/null)" != "${config[*]}" ]; then
		(cd "$obj" && "$src/configure" "${config[@]}" >configure.log 2>&1) || {
			tail -30 "$obj/configure.log" >&2
			echo "build-qemu: configure failed (full log: $obj/configure.log)" >&2
			exit 1
		}
		echo "${config[*]}" >"$obj/.reseed-config"
	fi
	# What every later ninja run in OBJDIR needs (check-qtest.sh, bench.sh source it).
	printf 'export PYTHONPATH=%q\n' "${PYTHONPATH:-}" >"$obj/reseed-env.sh"
	ninja -C "$obj" "${targets[@]}" "$@" |
		{ grep -v '^ninja: no work to do' || true; }
	echo "$state" >"$obj/.reseed-built"

	# Into the build cache, whole or not at all; the eight newest stay (per row: plain,
	# sanitizers and fuzz, coverage).
	if [ -n "$cache" ] && [ ! -f "$cache/$key/.complete" ] && mkdir -p "$cache"; then
		tmp=$(mktemp -d "$cache/.new.XXXXXX")
		for f in "${kept[@]}"; do
			[ -e "$obj/$f" ] || continue
			mkdir -p "$(dirname "$tmp/$f")"
			cp -a "$obj/$f" "$tmp/$f"
		done
		touch "$tmp/.complete"
		rm -rf "${cache:?}/$key"
		mv "$tmp" "$cache/$key"
		ls -1dt "$cache"/*/ | tail -n +9 | xargs -r rm -rf
	fi
fi

# Option ROMs for -kernel boot: the dfsg tarball ships none and the i386 target,
# which would build them, is not configured.
rom=$obj/pc-bios/optionrom
mkdir -p "$rom"
cat >"$rom/config.mak.new" <<EOM
TOPSRC_DIR=$src
CC=gcc
CCAS=gcc
LD=ld
OBJCOPY=objcopy
PYTHON=python3
EOM
cmp -s "$rom/config.mak.new" "$rom/config.mak" && rm "$rom/config.mak.new" ||
	mv "$rom/config.mak.new" "$rom/config.mak"
make -s -C "$rom" -f "$src/pc-bios/optionrom/Makefile" \
	linuxboot_dma.bin kvmvapic.bin pvh.bin multiboot_dma.bin >/dev/null
# QEMU run from its build tree (and so the qtests) looks for firmware in qemu-bundle/;
# pc-bios/ is for -L.
bundle=$obj/qemu-bundle/usr/local/share/qemu
mkdir -p "$bundle"
for f in linuxboot_dma.bin kvmvapic.bin pvh.bin multiboot_dma.bin; do
	ln -sf "optionrom/$f" "$obj/pc-bios/$f"
	ln -sf "$(realpath "$rom/$f")" "$bundle/$f"
done
for f in bios-256k.bin bios.bin vgabios-stdvga.bin; do
	fw=/usr/share/seabios/$f
	[ -e "$fw" ] || { echo "build-qemu: $fw missing (package seabios)" >&2; exit 1; }
	ln -sf "$fw" "$obj/pc-bios/$f"
	ln -sf "$fw" "$bundle/$f"
done
# '-M pc' without -nodefaults adds an e1000, whose option ROM comes from ipxe-qemu.
fw=/usr/lib/ipxe/qemu/efi-e1000.rom
[ -e "$fw" ] || { echo "build-qemu: $fw missing (package ipxe-qemu)" >&2; exit 1; }
ln -sf "$fw" "$bundle/efi-e1000.rom"

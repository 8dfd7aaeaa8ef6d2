#!/usr/bin/env bash
# bench.sh - the benchmarks of the tree; each prints its figure next to its baseline,
# for every row of base trees given, side by side.
#
# Usage: scripts/bench.sh ROW:QEMU...   (from make bench, after each row's builds)
#
#   1. virtio-rng leak handler (QEMU): time from the leak handler's entry to its exit
#      with 2 and 64 held requests, declared by the monitor command and by loadvm,
#      and its share of the whole loadvm of a 256 MiB guest.  Targets: <= 50 us for
#      2 requests, < 1 % of loadvm.
#   2. epoch-guarded user-space generator (guest and host), next to getrandom(2) and the
#      vDSO's getrandom() (6.11) in the same guest run, 16 and 4096 bytes, with ratios.
#   3. guest boot: QEMU start to the first TAP line, TCG.
#   4. attestation: reports/s through configfs-tsm 1 and 8 at a time (p50, p99), the
#      fake SEV-SNP responder's own time per request (target < 1 ms with the signature),
#      against the legacy ioctl as baseline.
#   5. vDSO getrandom() with our change and without: one commit of the series reaches the
#      vDSO code (x86/vdso: states keyed on the RNG epoch, read from the vvar area).  The
#      row's tree before it is unpacked in build/bench/ (VDSO_BASE=COMMIT: compare HEAD
#      with that instead), its vDSO built with the same configuration and compiler
#      (ccache), and the images compared: sha256, the instructions of __vdso_getrandom and
#      of its ChaCha20 in objdump -d, how many of them address the vvar area, and the
#      cost per call: the kernel before the commit (built in build/bench/) and the
#      row's, booted in turn, five runs of bench_epoch_prng each.
#   6. EPOCH-DRBG (the OpenSSL provider): RAND_bytes of 16 and 4096 bytes against OpenSSL's
#      default CTR-DRBG, each in a library context of its own, interleaved: natively on
#      this machine (whose kernel has no RNG epoch: the wrapper without its epoch loads)
#      and in each row's Debian guest (TCG), where every call reads the epoch.  Target:
#      at least 0.95x.
#   BENCH_SECTIONS="2 5" runs only those sections.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 ROW:QEMU..." >&2; exit 2; }
rows=("$@")

# in_row ROW CMD...: CMD with the row's builds (scripts/vmharness.py finds them from
# RESEED_ROW; the paths the Makefile exported are for one row only).
in_row() {
	local row=$1
	shift
	RESEED_ROW=$row RESEED_KERNEL='' RESEED_INITRD='' RESEED_QEMU='' RESEED_QEMU_SRC='' "$@"
}
# BENCH_SECTIONS="2 5" runs only those sections (default: all).
want() { [[ " ${BENCH_SECTIONS:-1 2 3 4 5 6} " == *" $1 "* ]]; }
# each ROW:QEMU of the arguments, as "row qemu-version qemu-build-directory"
each_row() {
	local r
	for r in "${rows[@]}"; do echo "${r%%:*} ${r#*:} build/qemu-${r#*:}"; done
}

if want 1; then
echo "== 1. virtio-rng leak handler (qtest accelerator, native code)"
while read -r row qv obj; do
	# shellcheck source=/dev/null
	[ ! -f "$obj/reseed-env.sh" ] || . "$obj/reseed-env.sh"
	# (no build.ninja: restored from the build cache, scripts/build-qemu.sh)
	[ ! -f "$obj/build.ninja" ] ||
		ninja -C "$obj" tests/qtest/qos-test | { grep -v '^ninja: no work to do' || true; }
	QTEST_QEMU_BINARY=$obj/qemu-system-x86_64 QTEST_QEMU_IMG=$obj/qemu-img \
		"$obj/tests/qtest/qos-test" -m perf \
		-p /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/virtio-rng-pci/virtio-rng-pci-tests/leak-bench \
		2>&1 | sed -n "s/^# \(virtio-rng leak.*\)/   [QEMU $qv] \1/p"
done < <(each_row)
fi

if want 2; then
echo "== 2. epoch-guarded user-space ChaCha20 generator vs unguarded vs getrandom(2) vs the vDSO"
echo "   in the guest (TCG: wall-clock figures carry the emulator's noise):"
while read -r row qv obj; do
	in_row "$row" scripts/guest-test.py --name bench-epoch --raw --timeout 600 bench_epoch_prng |
		grep -v '^ok ' | sed "s/^/   [$row] /"
done < <(each_row)
echo "   on the host, instructions per call (valgrind --tool=callgrind, stable run to run;"
echo "   an anonymous page stands in for the epoch page; the same on every row):"
host=build/bench/bench_epoch_prng_host
mkdir -p build/bench
selftests=build/src/linux-$(each_row | awk 'NR == 1 { print $1 }')/tools/testing/selftests
gcc -O2 -D_GNU_SOURCE -I guest-tests -I "$selftests" -o "$host" guest-tests/bench_epoch_prng.c \
	"$selftests/vDSO/parse_vdso.c"
calls=100000
valgrind --tool=callgrind --callgrind-out-file=build/bench/callgrind.out \
	"$host" --anon --calls $calls >/dev/null 2>&1
callgrind_annotate --inclusive=yes --threshold=100 build/bench/callgrind.out 2>/dev/null |
	awk -v calls=$calls '/gen_(un)?guarded_[0-9]+/ {
		gsub(",", "", $1); name = $0; sub(/.*:/, "", name); sub(/ .*/, "", name)
		ir[name] = $1 / calls }
	END {
		for (n = 16; n <= 4096; n *= 256) {
			g = ir["gen_guarded_" n]; u = ir["gen_unguarded_" n]
			printf "   %4d bytes: guarded %.0f, unguarded %.0f instructions/call: guard +%.0f (%.2f %%)\n",
				n, g, u, g - u, u ? 100 * (g - u) / u : 0
		} }'
fi

if want 3; then
echo "== 3. guest boot (QEMU start to the first TAP line)"
while read -r row qv obj; do
	for i in 1 2 3; do
		in_row "$row" scripts/guest-test.py --name bench-boot smoke |
			sed -n "s/^# boot to user space: reached; /   [$row] /p"
	done
done < <(each_row)
fi

if want 4; then
echo "== 4. attestation reports: configfs-tsm -> sev-guest -> fake SEV-SNP responder"
echo "   the responder's own time per report request (qtest accelerator, native code;"
echo "   check, decrypt, sign ECDSA P-384, encrypt; target < 1 ms):"
scripts/snp-certs.sh build/snp
while read -r row qv obj; do
	[ ! -f "$obj/reseed-env.sh" ] || . "$obj/reseed-env.sh"
	[ ! -f "$obj/build.ninja" ] || ninja -C "$obj" tests/qtest/sev-snp-responder-test >/dev/null
	SNP_CERTS_DIR=build/snp QTEST_QEMU_BINARY=$obj/qemu-system-x86_64 \
		"$obj/tests/qtest/sev-snp-responder-test" --verbose \
		-p /x86_64/sev-snp-responder/timing 2>&1 | sed -n "s/^# \(LAST_NS.*\)/   [QEMU $qv] \1/p"
done < <(each_row)
echo "   the whole guest flow, TCG (the 'responder in QEMU' line: LAST_NS read by the guest):"
while read -r row qv obj; do
	in_row "$row" scripts/guest-test.py --name bench-tsm --raw --snp --timeout 900 bench_tsm |
		grep -v '^ok ' | sed "s/^/   [$row] /"
done < <(each_row)
fi

if want 5; then
echo "== 5. vDSO getrandom(): the vDSO image with our change and without it"
# instructions FUNCTION IMAGE: how many instructions objdump -d shows in FUNCTION
instructions() {
	objdump -d --no-show-raw-insn "$2" |
		awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { on = 0 } on && /^ *[0-9a-f]+:/ { n++ }
			END { print n + 0 }'
}
# vvar_refs FUNCTION IMAGE: instructions of FUNCTION that address the vvar area
# (RIP-relative: the data pages, the epoch page, the counter's page).  Like
# instructions(), it reads objdump to its end: awk exiting early would kill objdump with
# SIGPIPE, which pipefail turns into the script's failure.
vvar_refs() {
	objdump -d --no-show-raw-insn "$2" |
		awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { on = 0 }
			on && /\(%rip\)/ && /<(vvar_|timens_|rng_epoch_page|vmclock_page)/ { n++ }
			END { print n + 0 }'
}
# unpack_base TOP ROW COMMIT: the row's tree at COMMIT in TOP/build/src/linux-ROW, the
# same relative path from TOP as build/src/ from here, so that ccache, keyed on relative
# paths, hits for what did not change; false, and nothing done, when TOP holds COMMIT.
unpack_base() {
	local top=$1 row=$2 commit=$3
	[ "$(cat "$top/commit" 2>/dev/null)" != "$commit" ] || return 1
	rm -rf "$top"
	mkdir -p "$top/build/src/linux-$row"
	git -C "build/src/linux-$row" archive "$commit" | tar -x -C "$top/build/src/linux-$row"
}
# vdso_of_base ROW COMMIT TAG: build the row's vDSO at COMMIT in build/bench/ (once per
# commit and tag).
vdso_of_base() {
	local row=$1 commit=$2 top=build/bench/vdso-$3-$1
	local obj=$top/build/linux-$row
	if unpack_base "$top" "$row" "$commit"; then
		mkdir -p "$obj"
		cp "build/linux-$row/.config" "$obj/.config"
		(
			cd "$top"
			export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
			export KBUILD_BUILD_TIMESTAMP="2000-01-01" KBUILD_BUILD_USER=reseed \
				KBUILD_BUILD_HOST=reseed-lab
			make -s -C "build/src/linux-$row" O="$PWD/build/linux-$row" CC="ccache gcc" \
				olddefconfig >/dev/null
			make -s -C "build/src/linux-$row" O="$PWD/build/linux-$row" CC="ccache gcc" \
				-j"$(nproc)" arch/x86/entry/vdso/ >/dev/null
		)
		echo "$commit" >"$top/commit"
	fi
	echo "$obj/arch/x86/entry/vdso"
}
# kernel_of_base ROW COMMIT: the row's guest kernel at COMMIT, built in build/bench/ with
# the row's configuration fragments (scripts/build-kernel.sh: ccache, and its build cache,
# which a second run restores); prints the bzImage.
kernel_of_base() {
	local row=$1 commit=$2 top=build/bench/kern-base-$1
	if unpack_base "$top" "$row" "$commit"; then
		mkdir -p "$top/kernel-patches/$row"
		cp kernel-patches/guest.config "$top/kernel-patches/"
		cp "kernel-patches/$row/guest.config" "$top/kernel-patches/$row/"
		echo "$commit" >"$top/commit"
	fi
	(cd "$top" && "$OLDPWD/scripts/build-kernel.sh" "build/src/linux-$row" "build/linux-$row" \
		kernel-patches/guest.config "kernel-patches/$row/guest.config" >/dev/null)
	echo "$top/build/linux-$row/arch/x86/boot/bzImage"
}
# compare ROW WHAT WITH WITHOUT: the two vDSO images side by side.
compare() {
	local row=$1 what=$2 with=$3 without=$4 side dir sum n m
	for side in with without; do
		dir=${!side}
		sum=$(sha256sum "$dir/vdso64.so" | cut -c1-16)
		printf "   [%s] %-7s vdso64.so sha256 %s..., __vdso_getrandom %d instructions, " \
			"$row" "$side" "$sum" "$(instructions __vdso_getrandom "$dir/vdso64.so.dbg")"
		printf "__arch_chacha20_blocks_nostack %d\n" \
			"$(instructions __arch_chacha20_blocks_nostack "$dir/vdso64.so.dbg")"
	done
	if cmp -s "$with/vdso64.so" "$without/vdso64.so"; then
		echo "   [$row] $what: identical images, the same instructions per call," \
			"0 extra (target <= 2, <= 1 %)"
	else
		n=$(instructions __vdso_getrandom "$with/vdso64.so.dbg")
		m=$(instructions __vdso_getrandom "$without/vdso64.so.dbg")
		echo "   [$row] $what: the images differ, __vdso_getrandom $((n - m)) instructions" \
			"longer ($(vvar_refs __vdso_getrandom "$with/vdso64.so.dbg") addresses in the" \
			"vvar area against $(vvar_refs __vdso_getrandom "$without/vdso64.so.dbg")); the guest" \
			"timings of section 2 give the cost per call"
	fi
}
# One change of the series reaches the vDSO: the x86/vdso commit.  VDSO_BASE=COMMIT
# compares HEAD with another commit instead.
while read -r row qv obj; do
	src=build/src/linux-$row with=build/linux-$row/arch/x86/entry/vdso
	if ! nm "$with/vdso64.so.dbg" 2>/dev/null | grep -q ' __vdso_getrandom$'; then
		echo "   [$row] no vDSO getrandom() in this kernel (6.11 added it): nothing to compare"
		continue
	fi
	if [ -n "${VDSO_BASE:-}" ]; then
		base=$(git -C "$src" rev-parse "$VDSO_BASE")
		compare "$row" "HEAD vs $VDSO_BASE" "$with" "$(vdso_of_base "$row" "$base" given)"
		continue
	fi
	log=$(git -C "$src" log --reverse --format='%H %s' pristine..HEAD)
	reader=$(awk '$2 == "x86/vdso:" { print $1; exit }' <<<"$log")
	[ -n "$reader" ] || {
		echo "   [$row] no x86/vdso commit in the series: nothing to compare"
		continue
	}
	t0=$(date +%s)
	without=$(vdso_of_base "$row" "$(git -C "$src" rev-parse "$reader^")" epoch)
	echo "   [$row] without the vDSO's epoch: $(git -C "$src" log -1 --format='%h %s' "$reader^")" \
		"(vDSO image built in $(($(date +%s) - t0)) s)"
	compare "$row" "the vDSO keys its states on the RNG epoch" "$with" "$without"
	# The cost per call side by side: the kernel before the commit, booted with the same
	# guest programs, and the row's kernel, five runs of bench_epoch_prng each, in turn.
	t0=$(date +%s)
	base_kernel=$(kernel_of_base "$row" "$(git -C "$src" rev-parse "$reader^")")
	echo "   [$row] the kernel before it built in $(($(date +%s) - t0)) s; 5 runs per kernel," \
		"interleaved, 16 bytes, the vDSO's time over the unguarded generator's of the same run:"
	for round in 1 2 3 4 5; do
		for side in with without; do
			k=build/linux-$row/arch/x86/boot/bzImage
			[ "$side" = with ] || k=$base_kernel
			RESEED_ROW=$row RESEED_KERNEL=$k RESEED_INITRD='' RESEED_QEMU='' \
				RESEED_QEMU_SRC='' scripts/guest-test.py --name bench-vdso --raw \
				--timeout 600 bench_epoch_prng |
				awk -v side=$side '$1 == 16 && NF >= 9 { printf "%s %s %s\n", side, $8, $3 }'
		done
	done | awk -v row="$row" '
		{ r[$1, ++n[$1]] = $2 / $3 }
		function median(side,   i, j, t, a) {
			for (i = 1; i <= n[side]; i++) a[i] = r[side, i]
			for (i = 1; i <= n[side]; i++) for (j = i + 1; j <= n[side]; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return a[int((n[side] + 1) / 2)]
		}
		END {
			if (!n["with"] || !n["without"]) { print "   [" row "] no timings"; exit 1 }
			w = median("with"); o = median("without")
			printf "   [%s] with the epoch keying %.3f, without %.3f (medians of %d and %d):" \
				" %+.1f %% per call\n", row, w, o, n["with"], n["without"], 100 * (w - o) / o
		}'
done < <(each_row)
fi

if want 6; then
echo "== 6. EPOCH-DRBG against OpenSSL's default DRBG (target >= 0.95x)"
OPENSSL_CONF=build/userspace/host-openssl.cnf build/userspace/bin/epoch_drbg_test --bench \
	2>/dev/null | sed -n 's/^# bench: /   [host, native, no epoch] /p'
while read -r row qv obj; do
	in_row "$row" snapshot-scenarios/userspace.py --provider-only 2>&1 |
		sed -n "s/^  EPOCH-DRBG \(RAND_bytes.*\)/   [$row guest, TCG] \1/p"
done < <(each_row)
fi

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
#   2. epoch-guarded user-space generator (guest and host): see below.
#   3. guest boot: QEMU start to the first TAP line, TCG.
#   4. attestation: reports/s through configfs-tsm 1 and 8 at a time (p50, p99), the
#      fake SEV-SNP responder's own time per request (target < 1 ms with the signature),
#      against the legacy ioctl as baseline.
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
# each ROW:QEMU of the arguments, as "row qemu-version qemu-build-directory"
each_row() {
	local r
	for r in "${rows[@]}"; do echo "${r%%:*} ${r#*:} build/qemu-${r#*:}"; done
}

echo "== 1. virtio-rng leak handler (qtest accelerator, native code)"
while read -r row qv obj; do
	# shellcheck source=/dev/null
	[ ! -f "$obj/reseed-env.sh" ] || . "$obj/reseed-env.sh"
	ninja -C "$obj" tests/qtest/qos-test | { grep -v '^ninja: no work to do' || true; }
	QTEST_QEMU_BINARY=$obj/qemu-system-x86_64 QTEST_QEMU_IMG=$obj/qemu-img \
		"$obj/tests/qtest/qos-test" -m perf \
		-p /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/virtio-rng-pci/virtio-rng-pci-tests/leak-bench \
		2>&1 | sed -n "s/^# \(virtio-rng leak.*\)/   [QEMU $qv] \1/p"
done < <(each_row)

echo "== 2. epoch-guarded user-space ChaCha20 generator vs unguarded vs getrandom(2)"
echo "   in the guest (TCG: wall-clock figures carry the emulator's noise):"
while read -r row qv obj; do
	in_row "$row" scripts/guest-test.py --name bench-epoch --raw --timeout 600 bench_epoch_prng |
		grep -v '^ok ' | sed "s/^/   [$row] /"
done < <(each_row)
echo "   on the host, instructions per call (valgrind --tool=callgrind, stable run to run;"
echo "   an anonymous page stands in for the epoch page; the same on every row):"
host=build/bench/bench_epoch_prng_host
mkdir -p build/bench
gcc -O2 -D_GNU_SOURCE -I guest-tests -o "$host" guest-tests/bench_epoch_prng.c
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

echo "== 3. guest boot (QEMU start to the first TAP line)"
while read -r row qv obj; do
	for i in 1 2 3; do
		in_row "$row" scripts/guest-test.py --name bench-boot smoke |
			sed -n "s/^# boot to user space: reached; /   [$row] /p"
	done
done < <(each_row)

echo "== 4. attestation reports: configfs-tsm -> sev-guest -> fake SEV-SNP responder"
echo "   the responder's own time per report request (qtest accelerator, native code;"
echo "   check, decrypt, sign ECDSA P-384, encrypt; target < 1 ms):"
scripts/snp-certs.sh build/snp
while read -r row qv obj; do
	[ ! -f "$obj/reseed-env.sh" ] || . "$obj/reseed-env.sh"
	ninja -C "$obj" tests/qtest/sev-snp-responder-test >/dev/null
	SNP_CERTS_DIR=build/snp QTEST_QEMU_BINARY=$obj/qemu-system-x86_64 \
		"$obj/tests/qtest/sev-snp-responder-test" --verbose \
		-p /x86_64/sev-snp-responder/timing 2>&1 | sed -n "s/^# \(LAST_NS.*\)/   [QEMU $qv] \1/p"
done < <(each_row)
echo "   the whole guest flow, TCG (the 'responder in QEMU' line: LAST_NS read by the guest):"
while read -r row qv obj; do
	in_row "$row" scripts/guest-test.py --name bench-tsm --raw --snp --timeout 900 bench_tsm |
		grep -v '^ok ' | sed "s/^/   [$row] /"
done < <(each_row)

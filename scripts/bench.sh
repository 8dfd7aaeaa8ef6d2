#!/usr/bin/env bash
# bench.sh - the benchmarks of the tree; each prints its figure next to its baseline.
#
# Usage: scripts/bench.sh   (from make bench, after the QEMU and guest builds)
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

qos=build/qemu/tests/qtest/qos-test
echo "== 1. virtio-rng leak handler (qtest accelerator, native code)"
ninja -C build/qemu tests/qtest/qos-test | { grep -v '^ninja: no work to do' || true; }
QTEST_QEMU_BINARY=build/qemu/qemu-system-x86_64 QTEST_QEMU_IMG=build/qemu/qemu-img \
	"$qos" -m perf \
	-p /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/virtio-rng-pci/virtio-rng-pci-tests/leak-bench \
	2>&1 | sed -n 's/^# \(virtio-rng leak.*\)/   \1/p'

echo "== 2. epoch-guarded user-space ChaCha20 generator vs unguarded vs getrandom(2)"
echo "   in the guest (TCG: wall-clock figures carry the emulator's noise):"
scripts/guest-test.py --name bench-epoch --raw --timeout 600 bench_epoch_prng | grep -v '^ok '
echo "   on the host, instructions per call (valgrind --tool=callgrind, stable run to run;"
echo "   an anonymous page stands in for the epoch page):"
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
for i in 1 2 3; do
	scripts/guest-test.py --name bench-boot smoke | sed -n 's/^# boot to user space: reached; /   /p'
done

echo "== 4. attestation reports: configfs-tsm -> sev-guest -> fake SEV-SNP responder"
echo "   the responder's own time per report request (qtest accelerator, native code;"
echo "   check, decrypt, sign ECDSA P-384, encrypt; target < 1 ms):"
scripts/snp-certs.sh build/snp
ninja -C build/qemu tests/qtest/sev-snp-responder-test >/dev/null
SNP_CERTS_DIR=build/snp QTEST_QEMU_BINARY=build/qemu/qemu-system-x86_64 \
	build/qemu/tests/qtest/sev-snp-responder-test --verbose \
	-p /x86_64/sev-snp-responder/timing 2>&1 | sed -n 's/^# \(LAST_NS.*\)/   \1/p'
echo "   the whole guest flow, TCG (the 'responder in QEMU' line: LAST_NS read by the guest):"
scripts/guest-test.py --name bench-tsm --raw --snp --timeout 900 bench_tsm | grep -v '^ok '

#!/usr/bin/env bash
# fuzz.sh - run the fuzz targets of our QEMU devices for a fixed time each, as TAP.
#
# Usage: scripts/fuzz.sh FUZZ-BINARY SECONDS OUTDIR [TARGET...]
#
#   FUZZ-BINARY is the row's qemu-fuzz-x86_64 (scripts/build-qemu.sh with
#   RESEED_QEMU_FUZZ=1: libFuzzer, ASan, UBSan).  Each target is QEMU's generic-fuzz
#   (docs/devel/testing/fuzzing.rst) on one device; the virtio-rng targets with
#   QEMU_FUZZ_LEAK=1, which adds OP_LEAK, our operation that declares an entropy leak
#   while the VM runs or is stopped (without it the operations are upstream's, and so is
#   what a corpus means):
#
#     virtio-rng-leak    virtio-rng-pci with the leak queues: every register, DMA, leaks
#     virtio-rng-leak-packed  the same with packed rings and no indirect descriptors
#                        (the held requests' descriptor counts, and what migrates of them)
#     virtio-rng-leak-in-order  the same with in_order (QEMU 9.1 and later)
#     sev-snp-responder  the fake SEV-SNP PSP: every register, the doorbell, the message
#                        pages (a fixed VMPCK0, so that the seeds' requests decrypt)
#
#   The working corpus, OUTDIR/TARGET/corpus, starts from the seed corpus in the tree
#   (fuzz/corpus/TARGET, scripts/fuzz-corpus.py; the variants use virtio-rng-leak's)
#   and keeps what each run adds.  Prints,
#   per target, execs, execs per second, coverage (libFuzzer's edge count) and new
#   inputs; a crash input is kept in OUTDIR/TARGET/ and the line is 'not ok'.  Each
#   run is added to OUTDIR/TARGET/ledger.tsv, whose total is the figure docs/robustness.md gives.
#   libFuzzer's -seed is FUZZ_SEED when set, a new one otherwise; the TAP line names it,
#   so that a run can be repeated (FUZZ_SEED=N, the same corpus).
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 FUZZ-BINARY SECONDS OUTDIR [TARGET...]" >&2; exit 2; }
bin=$(realpath "$1") seconds=$2 out=$3
shift 3
top=$(cd "$(dirname "$0")/.." && pwd)
certs=$top/build/snp
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(virtio-rng-leak virtio-rng-leak-packed sev-snp-responder)
"$top/scripts/snp-certs.sh" "$certs" >/dev/null

# The qtests' fixed VMPCK0, which scripts/fuzz-corpus.py encrypts the seeds with
vmpck0=c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf
# acpi=off: the same PC, a quarter faster to reset between inputs (no ACPI tables)
machine="-M pc,acpi=off -nodefaults"
# The default, unlimited quota, as most VMs run it: every request is served when it is
# kicked.  (Until 2026-12-05 the target had max-bytes=1024,period=1000: without a limit
# the fuzzer drifted to inputs whose walk of the available buffers, the virtio core's
# virtqueue_get_avail_bytes(), took up to 100 s; qemu-patches/*/0028 bounds that walk.)
args_virtio_rng_leak="$machine -device virtio-rng-pci,id=rng0,ioeventfd=off"
objects_virtio_rng_leak="virtio*"
leak_virtio_rng_leak=1
args_virtio_rng_leak_packed="$args_virtio_rng_leak,packed=on,indirect_desc=off"
objects_virtio_rng_leak_packed=$objects_virtio_rng_leak
leak_virtio_rng_leak_packed=1
args_virtio_rng_leak_in_order="$args_virtio_rng_leak,in_order=on"
objects_virtio_rng_leak_in_order=$objects_virtio_rng_leak
leak_virtio_rng_leak_in_order=1
args_sev_snp_responder="$machine -device sev-snp-responder,vcek-key=$certs/vcek.key,\
vcek-cert=$certs/vcek.der,ask-cert=$certs/ask.der,ark-cert=$certs/ark.der,vmpck0=$vmpck0"
objects_sev_snp_responder="sev-snp-responder*"

mkdir -p "$out"
n=0 failed=0
echo "TAP version 13"
echo "1..${#targets[@]}"
for t in "${targets[@]}"; do
	n=$((n + 1))
	v=${t//-/_}
	a="args_$v" o="objects_$v" l="leak_$v"
	seed=${FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
	[ -n "${!a:-}" ] || { echo "fuzz: no target '$t'" >&2; exit 2; }
	dir=$out/$t
	mkdir -p "$dir/corpus"
	log=$dir/last.log
	rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
	# The ring-layout variants start from the device's seeds.
	seeds=$top/fuzz/corpus/$t
	case $t in virtio-rng-leak-*) seeds=$top/fuzz/corpus/virtio-rng-leak ;; esac
	# Reports abort; leaks are not looked for (QEMU frees little at exit, and LSan
	# takes most of the time); a double fetch of guest memory gets the same bytes.
	rc=0 start=$SECONDS
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
	QEMU_AVOID_DOUBLE_FETCH=1 QEMU_FUZZ_ARGS="${!a}" QEMU_FUZZ_OBJECTS="${!o}" \
		${!l:+env QEMU_FUZZ_LEAK=1} "$bin" --fuzz-target=generic-fuzz -detect_leaks=0 \
		-max_len=8192 -seed="$seed" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/" \
		"$dir/corpus" "$seeds" >"$log" 2>&1 || rc=$?
	# The time it ran: a run stopped early (SIGINT to the fuzzer, status 72, final stats
	# still printed) is counted for what it did, not for what it was given.
	ran=$((SECONDS - start))
	[ "$ran" -le "$seconds" ] || ran=$seconds
	[ "$rc" -ne 72 ] || ! grep -q 'run interrupted' "$log" || rc=0
	stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
	execs=$(stat number_of_executed_units) rate=$(stat average_exec_per_sec)
	added=$(stat new_units_added)
	cov=$(grep -aoE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
	crashes=$(find "$dir" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'timeout-*' |
		wc -l)
	[ -f "$dir/ledger.tsv" ] ||
		printf 'date\tseconds\texecs\texec_per_s\tcov\tnew_units\tcrashes\n' >"$dir/ledger.tsv"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$ran" "${execs:-0}" \
		"${rate:-0}" "${cov:-0}" "${added:-0}" "$crashes" >>"$dir/ledger.tsv"
	total=$(awk -F'\t' 'NR > 1 { s += $3 } END { print s + 0 }' "$dir/ledger.tsv")
	line="$t: ${execs:-0} execs in ${ran} s (${rate:-0}/s), coverage ${cov:-?} edges,"
	line+=" ${added:-0} new inputs, corpus $(find "$dir/corpus" -type f | wc -l); $total execs"
	line+=" over all runs ($dir/ledger.tsv); $crashes crash inputs; -seed=$seed"
	if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ] || [ -z "$execs" ]; then
		failed=$((failed + 1))
		echo "not ok $n - $line (fuzzer status $rc)"
		grep -aE 'ERROR|SUMMARY|runtime error|#[0-9]+ 0x' "$log" | head -20 | sed 's/^/#   /'
	else
		echo "ok $n - $line"
	fi
done
[ "$failed" -eq 0 ]

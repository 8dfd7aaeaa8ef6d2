#!/usr/bin/env bash
# fuzz-coverage.sh - the lines of our devices that the fuzz corpus reaches.
#
# Usage: scripts/fuzz-coverage.sh COVERAGE-FUZZ-BINARY QEMU-SRCDIR CORPUS-DIR OUT.txt
#
#   COVERAGE-FUZZ-BINARY is qemu-fuzz-x86_64 built with clang's source-based coverage
#   (scripts/build-qemu.sh with RESEED_QEMU_FUZZ=coverage, 'make fuzz-coverage').  Each
#   target's inputs (CORPUS-DIR/TARGET/corpus, what 'make fuzz' kept, and the seeds of
#   fuzz/corpus/TARGET) are run once, with the arguments scripts/fuzz.sh fuzzes with,
#   and llvm-cov reports line, function and branch coverage of the files each target
#   is about: hw/virtio/virtio-rng.c and hw/misc/sev-snp-responder.c.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 COVERAGE-FUZZ-BINARY QEMU-SRCDIR CORPUS-DIR OUT.txt" >&2; exit 2; }
bin=$(realpath "$1") src=$(realpath "$2") corpus=$3 out=$4
top=$(cd "$(dirname "$0")/.." && pwd)
llvm=$(ls -d /usr/lib/llvm-*/bin | sort -V | tail -1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# scripts/fuzz.sh's targets, their arguments and objects: source its definitions.
eval "$(sed -n '/^vmpck0=/,/^objects_sev_snp_responder=/p' "$top/scripts/fuzz.sh" |
	sed "s|\$certs|$top/build/snp|g")"
: >"$out"
for t in virtio-rng-leak:hw/virtio/virtio-rng.c sev-snp-responder:hw/misc/sev-snp-responder.c; do
	name=${t%%:*} file=${t#*:} v=${name//-/_}
	a="args_$v" o="objects_$v"
	dirs=("$top/fuzz/corpus/$name")
	[ ! -d "$corpus/$name/corpus" ] || dirs+=("$corpus/$name/corpus")
	n=$(find "${dirs[@]}" -type f | wc -l)
	# Each input once (-runs=0)
	LLVM_PROFILE_FILE="$tmp/$name-%p.profraw" QEMU_AVOID_DOUBLE_FETCH=1 \
		QEMU_FUZZ_ARGS="${!a}" QEMU_FUZZ_OBJECTS="${!o}" \
		"$bin" --fuzz-target=generic-fuzz -runs=0 "${dirs[@]}" >"$tmp/$name.log" 2>&1 || {
		tail -5 "$tmp/$name.log" >&2
		echo "fuzz-coverage: the replay of $name failed" >&2
		exit 1
	}
	"$llvm/llvm-profdata" merge -sparse "$tmp/$name"-*.profraw -o "$tmp/$name.profdata"
	{
		echo "== $name: $n inputs, $file"
		"$llvm/llvm-cov" report "$bin" -instr-profile="$tmp/$name.profdata" "$src/$file"
	} | tee -a "$out"
done

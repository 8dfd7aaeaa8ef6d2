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
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
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
	# Each input once, each in a process of its own: generic-fuzz resets the machine
	# between inputs but not guest RAM, so in one process an input's outcome depends
	# on the inputs before it (a seed's descriptors are read back as the previous
	# input left them), and the replay would not count what the input itself reaches.
	export QEMU_AVOID_DOUBLE_FETCH=1 QEMU_FUZZ_ARGS="${!a}" QEMU_FUZZ_OBJECTS="${!o}"
	l="leak_$v"
	if [ -n "${!l:-}" ]; then export QEMU_FUZZ_LEAK=1; else unset QEMU_FUZZ_LEAK; fi
	# (%4m: the runtime merges each process into one of four files as it exits)
	export LLVM_PROFILE_FILE="$tmp/$name-%4m.profraw"
	find "${dirs[@]}" -type f -print0 |
		xargs -0 -P"$(nproc)" -n1 sh -c '"$0" --fuzz-target=generic-fuzz -runs=0 "$1" \
			>/dev/null 2>&1 || [ ! -e "$1" ] || echo "fuzz-coverage: $1 failed" >&2' "$bin"
	# (an input that a running 'make fuzz' replaced meanwhile is not an error)
	"$llvm/llvm-profdata" merge -sparse "$tmp/$name"-*.profraw -o "$tmp/$name.profdata"
	cp "$tmp/$name.profdata" "$corpus/$name/coverage.profdata" 2>/dev/null || true
	{
		echo "== $name: $n inputs, $file"
		# (the mapping records the sources as the build saw them, ../src/...: filter
		# the report's lines rather than its arguments)
		"$llvm/llvm-cov" report "$bin" -instr-profile="$tmp/$name.profdata" |
			grep -E "^Filename|/${file//./\\.} " | sed 's/  */ /g'
		# and the functions of that file the corpus never ran (-show-functions wants
		# the path as the build recorded it; the JSON export names every function)
		"$llvm/llvm-cov" export "$bin" -instr-profile="$tmp/$name.profdata" \
			-skip-expansions 2>/dev/null | python3 -c '
import json, os, sys
path = sys.argv[1]
names = [f["name"].split(":")[-1] for f in json.load(sys.stdin)["data"][0]["functions"]
         if f["count"] == 0 and any(os.path.realpath(x) == path for x in f["filenames"])]
print("never run:", " ".join(names) or "none")' "$src/$file"
	} | tee -a "$out"
done

#!/usr/bin/env bash
# differential.sh - run the same guest tests on two kernels and require the same results.
#
# Usage: scripts/differential.sh TEST[,TEST...] KERNEL_A KERNEL_B INITRAMFS
#
#   Boots INITRAMFS once on each kernel under QEMU (TCG, serial console to a file) with
#   'tests=TEST,...' on the kernel command line; the guest's /init runs /tests/TEST and
#   powers off.  From each console it keeps, per test, the kselftest result lines
#   ('ok N ...', 'not ok N ...', the plan) and the exit status, and requires both lists
#   to be identical line by line; otherwise it prints a unified diff.  Typical use: our
#   6.1 against Debian's prebuilt upstream kernel, for an ABI we backported.
#
#   Exit status: 0 identical, 1 different, 2 a guest did not run the tests to the end.
#   Environment: DIFF_TIMEOUT (seconds per boot, default 300), DIFF_RUNDIR (default
#   build/run/ROW/differential-TEST), RESEED_QEMU (the QEMU build directory of the row,
#   exported by the Makefile; default the newest row's).
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 4 ] || {
	echo "usage: $0 TEST[,TEST...] KERNEL_A KERNEL_B INITRAMFS" >&2
	exit 2
}
tests=$1 kernel_a=$2 kernel_b=$3 initramfs=$4
top=$(cd "$(dirname "$0")/.." && pwd)
row=${RESEED_ROW:-$(sed -n 's/^DEFAULT_ROW *:= *//p' "$top/versions.mk")}
qemu_dir=${RESEED_QEMU:-$top/build/qemu-$(sed -n "s/^QEMU_OF_ROW_$row *:= *//p" "$top/versions.mk")}
qemu=$qemu_dir/qemu-system-x86_64
firmware=$qemu_dir/pc-bios
timeout=${DIFF_TIMEOUT:-300}
rundir=${DIFF_RUNDIR:-$top/build/run/$row/differential-${tests//,/-}}

for f in "$kernel_a" "$kernel_b" "$initramfs" "$qemu"; do
	[ -r "$f" ] || { echo "differential: $f: not found" >&2; exit 2; }
done

# The QEMU process running now, ended by its pid if we are interrupted.
qemu_pid=
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
	[ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# boot NAME KERNEL: one guest run; the console ends up in $rundir/NAME/console.log.
boot() {
	local dir=$rundir/$1 kernel=$2 waited=0 rc=0
	rm -rf "$dir"
	mkdir -p "$dir"
	"$qemu" -nodefaults -display none -no-reboot -L "$firmware" \
		-machine pc -accel tcg -cpu max -m 256 -smp 1 \
		-kernel "$kernel" -initrd "$initramfs" \
		-append "console=ttyS0 panic=-1 no_timer_check quiet tests=$tests" \
		-serial "file:$dir/console.log" \
		</dev/null >"$dir/qemu.stderr" 2>&1 &
	qemu_pid=$!
	while kill -0 "$qemu_pid" 2>/dev/null; do
		if [ "$waited" -ge "$((timeout * 10))" ]; then
			echo "differential: $1: still running after ${timeout}s," \
				"killing QEMU ($qemu_pid)" >&2
			kill "$qemu_pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	wait "$qemu_pid" || rc=$?
	qemu_pid=
	echo "$rc" >"$dir/qemu.status"
}

# results NAME: the comparable lines of each test, prefixed with the test's name.
# Console lines can carry a carriage return and, from the kernel, a timestamp.
results() {
	local console=$rundir/$1/console.log t
	for t in ${tests//,/ }; do
		tr -d '\r' <"$console" | sed -e 's/^\[ *[0-9]*\.[0-9]*\] *//' | awk -v t="$t" '
			$0 == "# reseed-lab: begin " t { inside = 1; next }
			inside && index($0, "# reseed-lab: end " t " rc=") == 1 {
				print t ": exit status " substr($0, length("# reseed-lab: end " t " rc=") + 1)
				inside = 0; ended = 1; next
			}
			inside && /^(ok|not ok) [0-9]+/ { print t ": " $0 }
			inside && /^1\.\.[0-9]+$/ { print t ": " $0 }
			END { if (!ended) print t ": did not finish" }'
	done
}

describe() {
	local console=$rundir/$1/console.log
	tr -d '\r' <"$console" |
		sed -n 's/^.*# reseed-lab: userspace up, kernel \([^ ]*\).*$/\1/p' | awk 'NR == 1'
}

status=0
for side in a b; do
	kernel=kernel_$side
	boot "$side" "${!kernel}"
	results "$side" >"$rundir/$side/results"
	version=$(describe "$side")
	echo "# $side: ${!kernel} (${version:-user space not reached}):" \
		"$(grep -c ': ok ' "$rundir/$side/results" || true) ok," \
		"$(grep -c ': not ok ' "$rundir/$side/results" || true) not ok"
	if grep -q ': did not finish$' "$rundir/$side/results" ||
	   ! grep -q ': exit status ' "$rundir/$side/results"; then
		echo "differential: $side did not run '$tests' to the end; last console lines:" >&2
		tail -n 20 "$rundir/$side/console.log" | sed 's/^/#   | /' >&2
		status=2
	fi
done
[ "$status" -eq 0 ] || exit "$status"

if diff -u --label "a: $kernel_a" --label "b: $kernel_b" \
	"$rundir/a/results" "$rundir/b/results"; then
	echo "# identical: $(wc -l <"$rundir/a/results") lines ($rundir/{a,b}/results)"
	exit 0
fi
echo "# DIFFERENT: see the diff above; consoles in $rundir/{a,b}/console.log"
exit 1

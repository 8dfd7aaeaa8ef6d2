#!/usr/bin/env bash
# check-qtest.sh - build and run our QEMU qtests, as one TAP file.
#
# Usage: scripts/check-qtest.sh QEMU-SRCDIR QEMU-OBJDIR OUT.tap
#   Runs, against the qemu-system-x86_64 of QEMU-OBJDIR, the qos graph paths of qos-test
#   that name virtio-rng (QEMU's own tests and ours) and every test of
#   sev-snp-responder-test (with the fake AMD chain of scripts/snp-certs.sh in
#   build/snp) and, where QEMU-SRCDIR has it (QEMU 10), of vmclock-test, and writes
#   their results to OUT.tap.  A test binary that is missing,
#   lists no test, crashes or runs fewer tests than it lists, and a skipped test, are
#   failures of their own.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 QEMU-SRCDIR QEMU-OBJDIR OUT.tap" >&2; exit 2; }
src=$1 obj=$2 out=$3
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/scripts/snp-certs.sh" "$top/build/snp"
# QEMU 10's meson lives in build/tools: ninja may re-run it (scripts/build-qemu.sh)
# shellcheck source=/dev/null
[ ! -f "$obj/reseed-env.sh" ] || . "$obj/reseed-env.sh"
export SNP_CERTS_DIR=$top/build/snp
export QTEST_QEMU_BINARY=$obj/qemu-system-x86_64 QTEST_QEMU_IMG=$obj/qemu-img
export QTEST_QEMU_STORAGE_DAEMON_BINARY=/bin/false

log=${out%.tap}.log
results=$(mktemp)
trap 'rm -f "$results"' EXIT
: >"$log"
failed=0

# run_suite NAME GREP-PATTERN [isolate]: build tests/qtest/NAME and run the tests it
# lists that match (each in a process of its own with 'isolate'); write one line
# "ok|not ok<TAB>name" per result to $results, and one "not ok" more if the binary
# cannot be built, lists nothing, or crashed or stopped before the end of its list.
run_suite() {
	local name=$1 bin=$obj/tests/qtest/$1 pattern=$2 isolate=${3:-} paths=() args=()
	local rc r n suite_log
	# A build directory restored from the build cache has no build.ninja: its binaries
	# are those of this tree's state (scripts/build-qemu.sh).
	if { [ -f "$obj/build.ninja" ] && ! ninja -C "$obj" "tests/qtest/$name" \
		>"$results.build" 2>&1; } || [ ! -x "$bin" ]; then
		echo "check-qtest: cannot build $name" >&2
		[ ! -f "$results.build" ] || tail -20 "$results.build" >&2
		printf 'not ok\t%s builds\n' "$name" >>"$results"
		failed=1
		rm -f "$results.build"
		return
	fi
	[ ! -f "$results.build" ] || grep -vE '^ninja: (no work to do|Entering directory)' \
		"$results.build" || true
	rm -f "$results.build"
	mapfile -t paths < <("$bin" -l | grep -- "$pattern" || true)
	if [ ${#paths[@]} -eq 0 ]; then
		echo "check-qtest: $name lists no test matching '$pattern'" >&2
		printf 'not ok\t%s: tests exist\n' "$name" >>"$results"
		failed=1
		return
	fi
	suite_log=$(mktemp)
	if [ "$isolate" = isolate ]; then
		# One process per test: a crash fails that test and not the rest.
		rc=0
		for p in "${paths[@]}"; do
			set +e
			timeout 300 "$bin" --tap -p "$p" >"$suite_log.one" 2>&1
			r=$?
			set -e
			cat "$suite_log.one" >>"$suite_log"
			if [ "$r" -ne 0 ] && ! grep -qE "^not ok [0-9]+ $p\$" "$suite_log.one"; then
				echo "not ok 0 $p (exit status $r)" >>"$suite_log"
			fi
			[ "$r" -eq 0 ] || rc=$r
		done
		rm -f "$suite_log.one"
	else
		for p in "${paths[@]}"; do args+=(-p "$p"); done
		set +e
		timeout 600 "$bin" --tap -k "${args[@]}" >"$suite_log" 2>&1
		rc=$?
		set -e
	fi
	cat "$suite_log" >>"$log"
	# A skipped test did not test anything: it counts as a failure here.
	awk '/^(not ok|ok) [0-9]+ / {
		verdict = ($1 == "not" || / # SKIP/) ? "not ok" : "ok"
		name = $0; sub(/^(not ok|ok) [0-9]+ /, "", name)
		print verdict "\t" name
	}' "$suite_log" >>"$results.$name"
	n=$(grep -c . "$results.$name" || true)
	cat "$results.$name" >>"$results"
	if [ "$n" -lt ${#paths[@]} ] || { [ "$rc" -ne 0 ] && [ "$isolate" != isolate ]; }; then
		printf 'not ok\t%s ran %d of %d tests, exit status %d\n' \
			"$name" "$n" ${#paths[@]} "$rc" >>"$results"
	fi
	if [ "$rc" -ne 0 ] || [ "$n" -ne ${#paths[@]} ] || grep -q '^not ok' "$results.$name"; then
		echo "check-qtest: $name exit status $rc, $n of ${#paths[@]} tests reported" \
			"(log: $log)" >&2
		grep -vE '^(ok|not ok|#|1\.\.)' "$suite_log" | tail -20 >&2
		failed=1
	fi
	rm -f "$suite_log" "$results.$name"
}

run_suite qos-test '/virtio-rng'
run_suite sev-snp-responder-test '/sev-snp-responder/' isolate
# QEMU 7.2 has no vmclock device
if [ -f "$src/tests/qtest/vmclock-test.c" ]; then
	run_suite vmclock-test '/vmclock/' isolate
fi

awk -F '\t' '{ verdict[++n] = $1; names[n] = $2 }
END {
	print "TAP version 13"; print "1.." n
	for (i = 1; i <= n; i++) print verdict[i] " " i " - " names[i]
}' "$results" >"$out"
sed -n '3,$p' "$out"
if [ "$failed" -ne 0 ] || grep -q '^not ok' "$out"; then
	exit 1
fi

#!/usr/bin/env bash
# check-qtest.sh - build QEMU's qos-test and run every virtio-rng qtest, as TAP.
#
# Usage: scripts/check-qtest.sh QEMU-SRCDIR QEMU-OBJDIR OUT.tap
#   Runs the qos graph paths that name virtio-rng (QEMU's own tests and ours) against
#   the qemu-system-x86_64 of QEMU-OBJDIR and writes their results to OUT.tap.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 QEMU-SRCDIR QEMU-OBJDIR OUT.tap" >&2; exit 2; }
obj=$2 out=$3

ninja -C "$obj" tests/qtest/qos-test | { grep -v '^ninja: no work to do' || true; }
export QTEST_QEMU_BINARY=$obj/qemu-system-x86_64 QTEST_QEMU_IMG=$obj/qemu-img
export QTEST_QEMU_STORAGE_DAEMON_BINARY=/bin/false
qos=$obj/tests/qtest/qos-test

mapfile -t paths < <("$qos" -l | grep -- '/virtio-rng' || true)
if [ ${#paths[@]} -eq 0 ]; then
	echo "check-qtest: qos-test lists no virtio-rng test" >&2
	printf 'TAP version 13\n1..1\nnot ok 1 - qtest: virtio-rng tests exist\n' >"$out"
	exit 1
fi
args=()
for p in "${paths[@]}"; do args+=(-p "$p"); done

log=${out%.tap}.log
set +e
timeout 600 "$qos" --tap -k "${args[@]}" >"$log" 2>&1
rc=$?
set -e
results=$(grep -cE '^(not ok|ok) [0-9]+ ' "$log" || true)
awk -v rc="$rc" -v want="${#paths[@]}" '/^(not ok|ok) [0-9]+ / {
	verdict[++n] = ($1 == "not") ? "not ok" : "ok"
	name = $0; sub(/^(not ok|ok) [0-9]+ /, "", name); names[n] = name
}
END {
	# A qos-test that aborted or ran fewer tests than listed is a failure of its own.
	extra = (rc != 0 || n < want) ? 1 : 0
	print "TAP version 13"; print "1.." n + extra
	for (i = 1; i <= n; i++) print verdict[i] " " i " - " names[i]
	if (extra)
		print "not ok " n + 1 " - qos-test ran " n + 0 " of " want " virtio-rng tests, exit status " rc
}' "$log" >"$out"
sed -n '3,$p' "$out"
n=$(grep -c '^ok ' "$out" || true)
if [ "$rc" -ne 0 ] || [ "$n" -ne ${#paths[@]} ]; then
	echo "check-qtest: qos-test exit status $rc, $n of ${#paths[@]} tests passed, $results reported (log: $log)" >&2
	grep -vE '^(ok|not ok|#)' "$log" | tail -20 >&2
	exit 1
fi

#!/usr/bin/env bash
# tap-step.sh - run a command and record its exit status as one TAP result.
#
# Usage: scripts/tap-step.sh OUT.tap NAME COMMAND [ARG...]
#   For checks that are a single verdict (a differential run, a generated file that must
#   be current): the command's output passes through, OUT.tap gets 'ok 1 - NAME' or
#   'not ok 1 - NAME (exit status N)', and the exit status is the command's.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OUT.tap NAME COMMAND [ARG...]" >&2; exit 2; }
out=$1 name=$2
shift 2
"$@"
rc=$?
mkdir -p "$(dirname "$out")"
if [ $rc -eq 0 ]; then
	printf 'TAP version 13\n1..1\nok 1 - %s\n' "$name" >"$out"
else
	printf 'TAP version 13\n1..1\nnot ok 1 - %s (exit status %d)\n' "$name" "$rc" >"$out"
fi
echo "$( [ $rc -eq 0 ] || echo 'not ' )ok - $name"
exit $rc

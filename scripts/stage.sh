#!/usr/bin/env bash
# stage.sh - run one build stage with a banner, its elapsed time, and a timing record.
#
# Usage: scripts/stage.sh NAME COMMAND [ARG...]
#   Prints '==> NAME' before and '<== NAME: Ns' after, appends 'DATE NAME SECONDS STATUS
#   CPU-SECONDS' to build/timings.log (the CPU time of the command and the processes it
#   waited for: a guest QEMU counts, a daemon's does not), and exits with the command's
#   status.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 NAME COMMAND [ARG...]" >&2; exit 2; }
name=$1
shift
start=$(date +%s.%N)
echo "==> $name"
"$@"
rc=$?
secs=$(echo "$(date +%s.%N) - $start" | bc)
# The builtin's second line: the children's user and system time, as 1m2.345s.
# (In this shell: in a pipeline or $(...) it would report a subshell's.)
t=$(mktemp)
times >"$t"
cpu=$(sed -n 2p "$t" | sed 's/m/*60+/g; s/s//g; s/ /+/' | bc)
rm -f "$t"
printf '<== %s: %.1fs%s\n' "$name" "$secs" "$([ $rc -eq 0 ] || echo " (FAILED, status $rc)")"
mkdir -p build
printf '%s %s %.1f %d %.1f\n' "$(date -u +%FT%TZ)" "$name" "$secs" "$rc" "$cpu" >>build/timings.log
exit $rc

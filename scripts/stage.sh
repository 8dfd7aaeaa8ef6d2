#!/usr/bin/env bash
# stage.sh - run one build stage with a banner, its elapsed time, and a timing record.
#
# Usage: scripts/stage.sh NAME COMMAND [ARG...]
#   Prints '==> NAME' before and '<== NAME: Ns' after, appends 'NAME SECONDS STATUS' to
#   build/timings.log, and exits with the command's status.
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
printf '<== %s: %.1fs%s\n' "$name" "$secs" "$([ $rc -eq 0 ] || echo " (FAILED, status $rc)")"
mkdir -p build
printf '%s %s %.1f %d\n' "$(date -u +%FT%TZ)" "$name" "$secs" "$rc" >>build/timings.log
exit $rc

#!/usr/bin/env bash
# demo.sh - what 'make' ends with, told for a newcomer: scenario 3 of snapshot-scenarios/
# (clones and randomness), then one attestation report checked on the host.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
cd "$(dirname "$0")/.."
snapshot-scenarios/run.py --demo "$@"
exec scripts/check-attest.py --demo

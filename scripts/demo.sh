#!/usr/bin/env bash
# demo.sh - what 'make' ends with, told for a newcomer: scenario 3 of snapshot-scenarios/
# (clones and randomness), then one attestation report checked on the host.
set -euo pipefail
cd "$(dirname "$0")/.."
snapshot-scenarios/run.py --demo "$@"
exec scripts/check-attest.py --demo

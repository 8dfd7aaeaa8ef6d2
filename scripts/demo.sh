#!/usr/bin/env bash
# demo.sh - what 'make' ends with: scenario 3 of snapshot-scenarios/ told for a newcomer.
set -euo pipefail
cd "$(dirname "$0")/.."
exec snapshot-scenarios/run.py --demo "$@"

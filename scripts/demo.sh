#!/usr/bin/env bash
# demo.sh - boot the reseed-lab guest and tell, in plain words, what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "Booting the guest kernel we just built (Linux 6.1 + kernel-patches/) in the QEMU we"
echo "just built (7.2 + qemu-patches/), with a virtio-rng device, and running the smoke test."
if scripts/guest-test.py --name demo smoke; then
	echo
	echo "The guest booted, its kernel RNG answered, and it read random bytes from QEMU's"
	echo "virtio-rng device through /dev/hwrng: the QEMU/guest loop works."
else
	echo "The smoke test failed: see the console lines above." >&2
	exit 1
fi

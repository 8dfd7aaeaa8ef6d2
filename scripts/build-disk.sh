#!/usr/bin/env bash
# build-disk.sh - the ext4 disk of a real Debian guest: a root file system from
# build-rootfs.sh with the user-space clone suite installed, made without loop mounts.
#
# Usage: scripts/build-disk.sh ROOTFS.tar BIN-DIR OUT.ext4 [PACKAGE.deb...]
#   BIN-DIR holds the suite's guest programs (built by make against Debian's libraries,
#   dynamically linked: in the guest they run on the image's own libraries).  Installs
#   them in /usr/local/lib/reseed-us, userspace/guest/consumers and a fresh TLS key and
#   certificate in /etc/reseed-us, reseed-us.service enabled and the suite's
#   reseed-notify hooks (userspace/guest/hooks); installs each
#   PACKAGE.deb with the image's own dpkg (chroot); then mke2fs -d.  OUT.ext4.manifest
#   lists every package of the image with its version, and those of RESEED_HOST_PACKAGES
#   (the host's packages built into a program of BIN-DIR: its Go, Rust's rand crate)
#   marked so.  RESEED_OPENSSL_TESTS, when set, is build-openssl-tests.sh's output for this
#   image: installed in /usr/local/lib/reseed-us/openssl-tests, with the suite's runner
#   for them (userspace/guest/ossl-test) and its HASH-DRBG configuration.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 ROOTFS.tar BIN-DIR OUT.ext4 [PACKAGE.deb...]" >&2; exit 2; }
tar=$1 bin=$2 out=$3
shift 3
[ "$(id -u)" -eq 0 ] || { echo "build-disk: needs root (file owners of the tar)" >&2; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)

# One build at a time per disk (make check and make image may meet here).
exec 9>"$out.lock"
flock 9
work=$(mktemp -d "$(dirname "$out")/.disk.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir "$root"
tar -xpf "$tar" -C "$root" --numeric-owner

lib=$root/usr/local/lib/reseed-us etc=$root/etc/reseed-us
install -d "$lib" "$etc/tls"
install -m 755 "$bin"/* "$here/userspace/guest/rand_python.py" "$lib/"
install -m 644 "$here/userspace/guest/consumers" "$etc/"
if [ -n "${RESEED_OPENSSL_TESTS:-}" ]; then
	install -d "$lib/openssl-tests"
	cp -a "$RESEED_OPENSSL_TESTS"/. "$lib/openssl-tests/"
	install -m 755 "$here/userspace/guest/ossl-test" "$lib/"
	install -m 644 "$here/userspace/guest/openssl-hash-drbg.cnf" "$etc/"
fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
	-subj /CN=reseed-guest -keyout "$etc/tls/key.pem" -out "$etc/tls/cert.pem" 2>/dev/null
install -m 644 "$here/userspace/guest/reseed-us.service" \
	"$here/userspace/guest/reseed-us-tls.service" "$root/etc/systemd/system/"
ln -sf /etc/systemd/system/reseed-us-tls.service \
	"$root/etc/systemd/system/multi-user.target.wants/reseed-us-tls.service"
install -d "$root/etc/reseed-notify.d"
install -m 755 "$here"/userspace/guest/hooks/* "$root/etc/reseed-notify.d/"
ln -sf /etc/systemd/system/reseed-us.service \
	"$root/etc/systemd/system/multi-user.target.wants/reseed-us.service"

for deb in "$@"; do
	cp "$deb" "$root/tmp/"
	chroot "$root" dpkg -i "/tmp/$(basename "$deb")" >/dev/null
	rm "$root/tmp/$(basename "$deb")"
done

# What systemd does once after /usr changed (ldconfig.service, the journal's catalog,
# systemd-update-done: ConditionNeedsUpdate=, /etc/.updated and /var/.updated older than
# /usr) every boot of this image did again, each one the first of a fresh overlay: 2.9 s
# of CPU and 1.6 s before sysinit.target under TCG.  Done here once, as those units do.
chroot "$root" ldconfig
chroot "$root" journalctl --update-catalog
usr_ns=$(stat -c %.9Y "$root/usr" | tr -d .)
for d in etc var; do
	printf '%s\n' "# This file was created by build-disk.sh, as systemd-update-done does: the" \
		"# modification time of /usr/ for which the updates of /etc/ and /var/ are applied." \
		"TIMESTAMP_NSEC=$usr_ns" >"$root/$d/.updated"
	touch -r "$root/usr" "$root/$d/.updated"
done
# Every package of the image and its version, for the results
dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${Version}\n' >"$out.manifest"
for p in ${RESEED_HOST_PACKAGES:-}; do
	dpkg-query -W -f='${Package} ${Version} (built in, host)\n' "$p" >>"$out.manifest"
done

# 1 GiB, sparse; the root file system uses a quarter of it.
rm -f "$out.tmp"
mke2fs -q -t ext4 -L reseed-root -d "$root" "$out.tmp" 1G
mv "$out.tmp" "$out"
echo "build-disk: $out ($(du -h "$out" | cut -f1) used of 1G)"

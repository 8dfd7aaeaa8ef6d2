#!/usr/bin/env bash
# build-epoch-drbg.sh - the EPOCH-DRBG OpenSSL provider and its Debian package.
#
# Usage: scripts/build-epoch-drbg.sh OUT-DIR
#   Builds userspace/epoch-drbg/epoch_drbg.c against Debian's libssl-dev (OpenSSL 3.0;
#   the provider interface is the same in 3.5) into OUT-DIR/epoch-drbg.so, and the binary
#   package OUT-DIR/reseed-epoch-drbg_VERSION_amd64.deb: the provider in OpenSSL's
#   modules directory, and an /etc/ssl/openssl.cnf that includes Debian's own (diverted
#   to openssl.cnf.distrib at install, restored at removal) and selects EPOCH-DRBG for
#   every program (userspace/epoch-drbg/openssl.cnf).
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUT-DIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/userspace/epoch-drbg
version=0.1-1
pkg=reseed-epoch-drbg
moddir=usr/lib/x86_64-linux-gnu/ossl-modules

mkdir -p "$out"
gcc -O2 -g -Wall -Wextra -Werror -fPIC -shared -DEPOCH_DRBG_VERSION="\"${version%-*}\"" \
	-Wl,-z,relro,-z,now -o "$out/epoch-drbg.so" "$src/epoch_drbg.c" -lcrypto -lpthread

root=$(mktemp -d "$out/.deb.XXXXXX")
trap 'rm -rf "$root"' EXIT
install -d "$root/DEBIAN" "$root/$moddir" "$root/usr/share/$pkg" "$root/etc/ssl" \
	"$root/usr/share/doc/$pkg"
install -m 644 "$out/epoch-drbg.so" "$root/$moddir/"
strip --strip-unneeded "$root/$moddir/epoch-drbg.so"
# Not a conffile: /etc/ssl/openssl.cnf is a link to it, which dpkg removes at removal,
# before postrm renames Debian's file back.
install -m 644 "$src/openssl.cnf" "$root/usr/share/$pkg/openssl.cnf"
ln -s "/usr/share/$pkg/openssl.cnf" "$root/etc/ssl/openssl.cnf"
install -m 644 "$src/debian/copyright" "$root/usr/share/doc/$pkg/copyright"
install -m 755 "$src/debian/preinst" "$src/debian/postrm" "$root/DEBIAN/"
cat >"$root/DEBIAN/control" <<CONTROL
Package: $pkg
Version: $version
Architecture: amd64
Maintainer: reseed-lab <dev@reseed-lab.invalid>
Depends: libc6 (>= 2.34), libssl3 (>= 3.0.0) | libssl3t64 (>= 3.0.0)
Section: libs
Priority: optional
Description: OpenSSL DRBGs that reseed when a VM snapshot or clone moved the RNG epoch
 An OpenSSL 3 provider whose EPOCH-DRBG reads the kernel's RNG epoch (ioctl RNDEPOCH
 on /dev/random) before every generate and reseeds from the kernel when it moved,
 selected for every program on the system by /etc/ssl/openssl.cnf (Debian's own
 configuration is kept, included, and restored when the package is removed).
CONTROL
"$here/scripts/build-deb.sh" "$root" "$out/${pkg}_${version}_amd64.deb"
echo "build-epoch-drbg: $out/${pkg}_${version}_amd64.deb"

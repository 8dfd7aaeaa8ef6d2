#!/usr/bin/env bash
# build-openssl-tests.sh - OpenSSL's own rand, DRBG and EVP_RAND tests, built from the
# Debian source of the OpenSSL that a guest image runs, for that image.
#
# Usage: scripts/build-openssl-tests.sh ROOTFS-DIR OUT-DIR
#   ROOTFS-DIR is build-rootfs.sh's output (rootfs.tar and its manifest).  Fetches
#   'apt-get source openssl' of the image's libssl3 version (or, when the archive no
#   longer serves that one, the newest it serves of the same upstream major.minor),
#   configures it with Debian's options (debian/rules), generates its headers and
#   compiles, from OpenSSL's test/ directory, drbgtest, rand_test, rand_status_test and
#   evp_test with OpenSSL's test driver (libtestutil), linked against the image's own
#   libcrypto.so.3 (taken from the tar): in the guest they run on the library every
#   program there uses, with the image's /etc/ssl/openssl.cnf (EPOCH-DRBG).
#   OUT-DIR gets the programs, evprand.txt (the EVP_RAND known-answer tests) and
#   'version' (the source's version and the image's).  Nothing of OpenSSL is built but
#   its test programs: libcrypto is Debian's.  The result is kept under
#   RESEED_BUILD_CACHE's parent (~/.cache/reseed-lab/openssl-tests), keyed by the image's
#   libcrypto and this script: a fresh clone copies it.  RESEED_BUILD_CACHE= (empty)
#   turns it off.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 ROOTFS-DIR OUT-DIR" >&2; exit 2; }
rootfs=$1 out=$(realpath -m "$2")
manifest=$rootfs/manifest
[ -f "$manifest" ] && [ -f "$rootfs/rootfs.tar" ] ||
	{ echo "build-openssl-tests: $rootfs has no manifest and rootfs.tar" >&2; exit 1; }
image_version=$(awk '$1 ~ /^libssl3(t64)?$/ { print $2; exit }' "$manifest")
[ -n "$image_version" ] ||
	{ echo "build-openssl-tests: the image has no libssl3 ($manifest)" >&2; exit 1; }

work=$out.tmp
rm -rf "$work"
mkdir -p "$work/src" "$work/lib"

# The image's libcrypto, to link against (its own libc is the guest's: not checked here)
tar -xf "$rootfs/rootfs.tar" -C "$work/lib" --wildcards --no-anchored \
	'x86_64-linux-gnu/libcrypto.so.3'
crypto=$(find "$work/lib" -name libcrypto.so.3 | head -1)
[ -n "$crypto" ] || { echo "build-openssl-tests: no libcrypto.so.3 in the image" >&2; exit 1; }

if [ -n "${RESEED_BUILD_CACHE-x}" ]; then
	base=${RESEED_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/kernel}
	key=$(cat "$(readlink -f "$crypto")" "$0" | sha256sum | cut -c1-16)
	cached=$(dirname "$base")/openssl-tests/$key
	if [ -f "$cached/version" ]; then
		rm -rf "$out" "$work"
		cp -a "$cached" "$out"
		touch "$out/version"	# newer than the image it was made for, for make
		echo "build-openssl-tests: from the cache ($cached): $(cat "$out/version")"
		exit 0
	fi
fi

# The image's version first; the archive keeps only the newest of each suite, and a
# security update's source may not be served where its binaries are.
same=${image_version%%-*}
same=${same%.*}.
candidates=$( { echo "$image_version"
	apt-cache showsrc openssl | sed -n 's/^Version: //p' | grep -F -- "$same" |
		sort -rV; } | awk '!seen[$0]++')
src=
for v in $candidates; do
	if (cd "$work/src" && apt-get source -qq "openssl=$v" >/dev/null 2>&1); then
		src=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'openssl-*' | head -1)
		source_version=$v
		break
	fi
	rm -rf "${work:?}/src/"*
done
[ -n "$src" ] || {
	echo "build-openssl-tests: Debian serves no openssl source of $same* (tried:" \
	     $candidates") (deb-src entries: run 'make deps')" >&2
	exit 1
}

# Debian's configuration (debian/rules' CONFARGS, and amd64's addition): the
# generated headers must describe the library the tests link against.
confargs=$(awk '/^CONFARGS *=/ { on = 1; sub(/^CONFARGS *= */, "") }
	on { line = $0; more = sub(/\\$/, "", line); printf "%s ", line; if (!more) exit }' \
	"$src/debian/rules")
(cd "$src" && ./Configure linux-x86_64 $confargs enable-ec_nistp_64_gcc_128 \
	>"$work/configure.log" 2>&1 && make build_generated >>"$work/configure.log" 2>&1) || {
	tail -20 "$work/configure.log" >&2
	echo "build-openssl-tests: configuring OpenSSL $source_version failed" >&2
	exit 1
}

ln -sf "$(basename "$crypto")" "$(dirname "$crypto")/libcrypto.so"

# libtestutil's sources, as test/build.info lists them
testutil=$(awk '/SOURCE\[libtestutil.a\]=/ { on = 1; sub(/.*=/, "") }
	on { line = $0; more = sub(/\\$/, "", line); printf "%s ", line; if (!more) exit }' \
	"$src/test/build.info" | sed 's/\$LIBAPPSSRC/..\/apps\/lib\/opt.c/')
cflags=(-O1 -g -pthread -w -I"$src/include" -I"$src/apps/include" -I"$src"
	-I"$src/providers/common/include" -I"$src/providers/fips/include"
	-I"$src/providers/implementations/include")
mkdir -p "$work/obj"
objs=()
for s in $testutil; do
	o=$work/obj/$(basename "${s%.c}").o
	gcc "${cflags[@]}" -c -o "$o" "$src/test/$s"
	objs+=("$o")
done
# An archive, as OpenSSL builds it: a test's own cleanup_tests() or test_get_options()
# replaces the driver's default
ar rcs "$work/libtestutil.a" "${objs[@]}"

link() {	# NAME SOURCE...
	local name=$1
	shift
	gcc "${cflags[@]}" -o "$work/$name" "$@" "$work/libtestutil.a" -L"$(dirname "$crypto")" -lcrypto \
		-Wl,--allow-shlib-undefined
}
link drbgtest "$src/test/drbgtest.c"
link rand_status_test "$src/test/rand_status_test.c"
link evp_test "$src/test/evp_test.c"
# 3.5's test_rand_uniform calls the library's internal ossl_rand_uniform_uint32(), which
# libcrypto.so does not export: the test takes the function's own source with it.
extra=()
if grep -q ossl_rand_uniform_uint32 "$src/test/rand_test.c"; then
	extra=("$src/crypto/rand/rand_uniform.c")
fi
link rand_test "$src/test/rand_test.c" "${extra[@]}"
cp "$src/test/recipes/30-test_evp_data/evprand.txt" "$work/"
echo "openssl-source $source_version image $image_version" >"$work/version"

rm -rf "$work/src" "$work/lib" "$work/obj" "$work/configure.log" "$work/libtestutil.a"
rm -rf "$out"
mv "$work" "$out"
if [ -n "${cached:-}" ]; then
	mkdir -p "$(dirname "$cached")"
	rm -rf "$cached.tmp" && cp -a "$out" "$cached.tmp" && mv -T "$cached.tmp" "$cached" ||
		true
fi
echo "build-openssl-tests: OpenSSL $source_version's tests for the image's $image_version in $out"

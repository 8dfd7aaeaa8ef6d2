#!/usr/bin/env bash
# sources.sh - unpack a pristine Debian source tree as a git repository and apply a series.
#
# Usage: scripts/sources.sh qemu|linux SRCDIR PATCHDIR VERSION
#
#   The first commit of SRCDIR is the pristine tree (tag 'pristine'); each patch named in
#   PATCHDIR/series becomes one commit (git am -3), so 'git log pristine..' reads like the
#   series.  Commit identities and dates are fixed, so the same inputs always give the
#   same commit ids and 'scripts/export-patches.sh' output is byte-identical.
#
#   Run again, it does nothing when the tree already carries exactly this series; it
#   re-applies the series from 'pristine' when the patch files changed; it refuses to touch
#   a tree with uncommitted changes or with commits that were not exported yet.
#
#   The pristine commit of each version is kept as a bare repository under
#   RESEED_SOURCE_CACHE (default ~/.cache/reseed-lab/src), so that a fresh clone checks
#   it out instead of fetching and unpacking again (the kernel's .tar.xz takes most of a
#   minute to unpack and commit).  The commit that a series ends at is kept there too
#   (refs/series/<hash of the series>), so that a fresh clone checks it out at once
#   instead of applying the patches one by one.  RESEED_SOURCE_CACHE= (empty) turns it
#   off.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

usage() { echo "usage: $0 qemu|linux SRCDIR PATCHDIR VERSION" >&2; exit 2; }
[ $# -ge 4 ] || usage
what=$1 src=$2 patches=$3 version=$4
case "$what" in qemu|linux) ;; *) usage ;; esac

top=$(pwd)
dl=$top/build/dl
export GIT_AUTHOR_NAME="reseed-lab" GIT_AUTHOR_EMAIL="reseed-lab@localhost"
export GIT_COMMITTER_NAME="reseed-lab" GIT_COMMITTER_EMAIL="reseed-lab@localhost"
export GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z"

# Absolute paths: 'git -C "$src" am' would look for relative ones inside the tree.
series_files() {
	[ -f "$patches/series" ] || return 0
	grep -vE '^[[:space:]]*(#|$)' "$patches/series" | while read -r p; do
		echo "$(realpath "$patches/$p")"
	done
}

series_hash() {
	{ echo "$version"; series_files | xargs -r cat; } | sha256sum | cut -d' ' -f1
}

fetch_qemu() {
	local v=$version
	mkdir -p "$dl/qemu"
	local offered
	offered=$(apt-cache showsrc qemu | sed -n 's/^Version: //p')
	if ! grep -Fxq -- "$v" <<<"$offered"; then
		# the newest of the same upstream major.minor: 1:10.0.13+ds-... -> '1:10.0.'
		local same=${version%%[+~-]*}
		same=${same%.*}.
		v=$(grep -F -- "$same" <<<"$offered" | sort -V | tail -1)
		[ -n "$v" ] || { echo "sources: Debian offers no qemu source package" >&2; exit 1; }
		echo "sources: WARNING: qemu $version is no longer served; using $v" >&2
	fi
	rm -rf "$dl/qemu" && mkdir -p "$dl/qemu"
	(cd "$dl/qemu" && apt-get source -qq "qemu=$v" >/dev/null 2>&1) || {
		echo "sources: 'apt-get source qemu=$v' failed (deb-src entries: run 'make deps')" >&2
		exit 1
	}
	local dir
	dir=$(find "$dl/qemu" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -1)
	rm -rf "$dir/.pc"
	mv "$dir" "$src"
	rm -rf "$dl/qemu"
}

# linux-source-X.Y for the X.Y of VERSION (6.1.192-3 -> linux-source-6.1): the package
# only puts the tarball into /usr/src, so installing it touches nothing else.
fetch_linux() {
	local base=${version%%-*}
	base=${base%.*}
	local pkg=linux-source-$base have tarball=/usr/src/linux-source-$base.tar.xz
	have=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null || true)
	if [ "$have" != "$version" ]; then
		if apt-cache policy "$pkg" | grep -Fq " $version " 2>/dev/null; then
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --allow-downgrades \
				"$pkg=$version" >/dev/null
		else
			echo "sources: WARNING: $pkg $version is no longer served; using ${have:-none}" >&2
		fi
	fi
	[ -f "$tarball" ] || { echo "sources: $tarball missing (run 'make deps')" >&2; exit 1; }
	mkdir -p "$src.tmp"
	tar -xf "$tarball" -C "$src.tmp" --strip-components=1
	mv "$src.tmp" "$src"
}

apply_series() {
	local p
	git -C "$src" am --abort >/dev/null 2>&1 || true
	git -C "$src" reset -q --hard pristine
	while read -r p; do
		if ! git -C "$src" am -q -3 --committer-date-is-author-date "$p" >/dev/null 2>&1; then
			git -C "$src" am --abort >/dev/null 2>&1 || true
			echo "sources: patch does not apply: ${p#"$top/"}" >&2
			exit 1
		fi
	done < <(series_files)
	record
	# The commit is the same for the same inputs: the next fresh clone checks it out.
	if [ -n "$cache" ] && [ -f "$mirror/reseed-complete" ]; then
		git -C "$src" push -q "$mirror" "HEAD:refs/series/$(series_hash)" >/dev/null 2>&1 ||
			true
	fi
}

# What the tree carries: the series hash and the commit it ends at.
record() {
	echo "$(series_hash) $(git -C "$src" rev-parse HEAD)" >"$src/.git/reseed-series"
}

cache=${RESEED_SOURCE_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/src}
mirror=$cache/$what-$(tr -c 'A-Za-z0-9.+\n-' _ <<<"$version").git

if [ "${5:-}" = --record ]; then
	record
	exit 0
fi

mkdir -p "$(dirname "$src")"
if [ ! -d "$src/.git" ]; then
	rm -rf "$src" "$src.tmp"
	if [ -n "$cache" ] && [ -f "$mirror/reseed-complete" ]; then
		git clone -q --no-checkout "$mirror" "$src"
		git -C "$src" remote remove origin
		if git -C "$src" fetch -q "$mirror" "refs/series/$(series_hash)" 2>/dev/null; then
			git -C "$src" checkout -q -B series FETCH_HEAD
			record
			echo "sources: $what: the series' tree from the source cache ($mirror)," \
			     "$(git -C "$src" rev-list --count pristine..HEAD) patches"
			exit 0
		fi
		git -C "$src" checkout -q -B series pristine
		echo "sources: $what: pristine tree from the source cache ($mirror)"
	else
		"fetch_$what"
		git -C "$src" init -q -b pristine-base
		git -C "$src" add -A -f .
		git -C "$src" commit -q -m "pristine $what $version from Debian's archive"
		git -C "$src" tag pristine
		git -C "$src" checkout -q -b series
		# A local bare clone: the objects are hard links, no copy.
		if [ -n "$cache" ] && mkdir -p "$cache"; then
			rm -rf "$mirror.tmp"
			git clone -q --bare "$src" "$mirror.tmp"
			touch "$mirror.tmp/reseed-complete"
			rm -rf "$mirror"
			mv "$mirror.tmp" "$mirror"
		fi
	fi
	apply_series
	echo "sources: $what: $(git -C "$src" rev-list --count pristine..HEAD) patches applied"
	exit 0
fi

read -r had_hash had_head <"$src/.git/reseed-series" 2>/dev/null || true
[ "${had_hash:-}" = "$(series_hash)" ] && exit 0

if [ "$(git -C "$src" rev-parse HEAD)" != "${had_head:-}" ]; then
	echo "sources: $src has commits that are not in $patches, and $patches changed:" \
	     "export them first (make export-patches) or reset the tree to the series" >&2
	exit 1
fi

if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
	echo "sources: $src has uncommitted changes and $patches changed; commit and export" \
	     "them first (make export-patches) or reset the tree" >&2
	exit 1
fi
apply_series
echo "sources: $what: series changed, re-applied $(git -C "$src" rev-list --count pristine..HEAD) patches"

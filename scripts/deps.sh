#!/usr/bin/env bash
# deps.sh - install, from Debian's archive only, every package the build and the tests need.
#
# Usage: scripts/deps.sh STAMP
#   Adds deb-src entries mirroring the machine's own Debian archive when none are
#   configured (apt-get source needs them, and says so), installs what is missing and
#   writes STAMP on success. Safe to run again: packages already present are skipped.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

stamp=${1:?usage: $0 STAMP}

packages=(
	# toolchain and build helpers
	build-essential git ccache pkg-config python3 python3-ply meson ninja-build flex bison bc
	cpio xz-utils dpkg-dev perl rsync
	# QEMU 7.2 and 10.0 (x86_64-softmmu, minimal device set) and their firmware; 10.0
	# configures in a venv of the system python3 (meson comes from build/tools)
	libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev libgnutls28-dev nettle-dev
	seabios ipxe-qemu python3-venv
	# Linux 6.1 and 6.12 (scripts/sources.sh installs the pinned linux-source-X.Y)
	linux-source-6.1 linux-source-6.12 libelf-dev libssl-dev
	# guest: busybox and the static test binaries
	busybox-static
	# host-side checks and benchmarks
	openssl valgrind
	# the real Debian guests (scripts/build-rootfs.sh, build-disk.sh) and the user-space
	# suite's programs, built against Debian's libraries (userspace/guest)
	mmdebstrap e2fsprogs libsodium-dev
	# the image audit's test image (scripts/build-cloud-image.sh): a GPT on a file
	fdisk
	# its Go consumer (a static program): the newest Go of Debian 12, from
	# bookworm-backports (versions.mk's GO_PACKAGE); its Rust consumer: Debian's rustc,
	# cargo and packaged crates (built offline)
	golang-1.23-go rustc cargo librust-rand-dev librust-libc-dev
	# its Java consumer, compiled here for Java 17 (the images run it on their own JVMs)
	openjdk-17-jdk-headless
	# the fuzz targets (scripts/fuzz.sh): QEMU's libFuzzer build needs clang and its
	# runtime; the seed corpus generator uses python3-cryptography
	clang libclang-rt-14-dev llvm python3-cryptography
	# Debian's own qemu-system-x86 binaries, unpacked into build/ (never installed) as
	# the unpatched QEMU of each row for scripts/check-migrate-unpatched.py: the
	# shared libraries they link that the build does not bring
	libaio1 libcapstone4 libfuse3-3 libibverbs1 libpmem1 librdmacm1 libslirp0 liburing2
	libvdeplug2
	# a private libvirtd in front of our QEMU (snapshot-scenarios/libvirt.py;
	# the monolithic 9.0 daemon, without libvirt-daemon-system: scripts/libvirtd.sh), the
	# report's charts (matplotlib, SVG) and the headless browser that renders the report
	libvirt-daemon libvirt-clients python3-libvirt python3-matplotlib chromium-headless-shell
)

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: need root to install packages (run 'sudo make deps')" >&2
		exit 1
	fi
}

have_deb_src() {
	apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -qx Sources
}

# Mirror every 'deb' source of the machine as 'deb-src' (deb822 and one-line formats).
add_deb_src() {
	local out=/etc/apt/sources.list.d/reseed-lab-deb-src.sources f
	: >"$out.tmp"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		[ "$f" = "$out" ] && continue
		# only Debian's own archive: skip third-party repositories
		grep -q 'debian' "$f" || continue
		awk 'BEGIN { RS = ""; ORS = "\n\n" }
		     /(^|\n)Types:[^\n]*deb([ \t\n]|$)/ && /debian/ {
			sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f" >>"$out.tmp"
	done
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^[[:space:]]*deb[[:space:]]\(.*debian.*\)$/deb-src \1/p' \
			/etc/apt/sources.list >/etc/apt/sources.list.d/reseed-lab-deb-src.list
		[ -s /etc/apt/sources.list.d/reseed-lab-deb-src.list ] ||
			rm -f /etc/apt/sources.list.d/reseed-lab-deb-src.list
	fi
	if [ -s "$out.tmp" ]; then
		mv "$out.tmp" "$out"
	else
		rm -f "$out.tmp"
	fi
	echo "deps: no deb-src entries were configured; added them for this machine's Debian archive" \
	     "(/etc/apt/sources.list.d/reseed-lab-deb-src.*), as 'apt-get source qemu' needs them"
}

# The second row of base trees is Debian 13's: QEMU 10.0 from trixie's sources (deb-src
# only: no binary package of trixie can be installed by accident), and meson >= 1.5,
# which QEMU 10 needs, from bookworm-backports (priority 100: never an upgrade unless
# asked for by version).  Same archive as the machine's own Debian entries.
row_sources=/etc/apt/sources.list.d/reseed-lab-rows.sources
add_row_sources() {
	local uri
	uri=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' 2>/dev/null |
		grep -v security | grep -m1 debian || true)
	uri=${uri%/}
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	cat >"$row_sources" <<EOF
# Added by reseed-lab's scripts/deps.sh: the sources of Debian 13's QEMU (the second row
# of base trees) and bookworm-backports for the meson that QEMU 10 needs.
Types: deb-src
URIs: $uri
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	echo "deps: added trixie deb-src and bookworm-backports ($row_sources) for the" \
	     "6.12/10.0 row: 'apt-get source qemu' of trixie, and meson 1.7"
}

updated=
apt_update() {
	[ -n "$updated" ] && return
	apt-get update -qq
	updated=1
}

missing=()
for p in "${packages[@]}"; do
	case "$p" in \#*) continue ;; esac
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done

if ! have_deb_src; then
	need_root
	add_deb_src
	apt_update
	if ! have_deb_src; then
		echo "deps: could not derive deb-src entries from this machine's apt sources;" \
		     "add a 'Types: deb-src' stanza for its Debian archive by hand" >&2
		exit 1
	fi
fi

if [ ! -f "$row_sources" ]; then
	need_root
	add_row_sources
	updated=
	apt_update
fi

if [ ${#missing[@]} -gt 0 ]; then
	need_root
	echo "deps: installing ${missing[*]}"
	apt_update
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null; then
		for p in "${missing[@]}"; do
			apt-cache show "$p" >/dev/null 2>&1 ||
				echo "deps: package '$p' is not available from the configured Debian archive" >&2
		done
		exit 1
	fi
fi

mkdir -p "$(dirname "$stamp")"
touch "$stamp"

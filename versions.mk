# The one place where the rows of base trees and their pristine source versions are pinned.
# A row is named by its Linux base; each pairs a Linux with the QEMU of the same Debian
# release; the real guests of the user-space suite are that release's Debian
# (DEBIAN_SUITE_<row>, scripts/build-rootfs.sh).  'make' builds DEFAULT_ROW, 'make check'
# every row, 'ROW=...' picks one.
# When Debian no longer serves a pinned version, scripts/sources.sh warns and uses the
# newest one it offers of the same upstream series; the series must still apply.
ROWS        := 6.12 6.1
DEFAULT_ROW := 6.12

# Debian 13 (trixie): Linux 6.12 LTS (the same package is in Debian 12's security
# archive) and QEMU 10.0 (trixie's source package; scripts/deps.sh adds its deb-src).
LINUX_DEB_VERSION_6.12 := 6.12.118-1~deb12u1
QEMU_OF_ROW_6.12       := 10.0
QEMU_DEB_VERSION_10.0  := 1:10.0.13+ds-0+deb13u1
DEBIAN_SUITE_6.12      := trixie

# Debian 12 (bookworm): Linux 6.1 and QEMU 7.2, where the io_uring and configfs-tsm
# backports live.
LINUX_DEB_VERSION_6.1  := 6.1.192-3
QEMU_OF_ROW_6.1        := 7.2
QEMU_DEB_VERSION_7.2   := 1:7.2+dfsg-7+deb12u18
DEBIAN_SUITE_6.1       := bookworm

# Debian's own binary package of each row's QEMU version (qemu-system-x86), the unpatched
# QEMU that scripts/check-migrate-unpatched.py migrates to and from: the 7.2 of bookworm,
# and the 10.0 of bookworm-backports (trixie's 10.0.13 needs trixie's libraries).
QEMU_DEBIAN_BINARY_10.0 := 1:10.0.2+ds-2+deb13u1~bpo12+1
QEMU_DEBIAN_BINARY_7.2  := 1:7.2+dfsg-7+deb12u18+b3

# The Go of the user-space suite's Go consumer (userspace/guest/rand_go), a static program
# built on the host: Debian 12's newest, from bookworm-backports (1.19, Debian 12's own,
# has no math/rand/v2), for both rows.
GO_PACKAGE := golang-1.23-go
GO         := /usr/lib/go-1.23/bin/go

# QEMU >= 8 needs meson >= 1.5; Debian 12 has 1.0.1.  This one is unpacked into
# build/tools (not installed), from bookworm-backports.
MESON_DEB_VERSION := 1.7.0-1~bpo12+1

# Debian's prebuilt upstream kernel, the reference for upstream ABIs (io_uring
# sysctls) and an example of an operator's own kernel for the scenarios.
UPSTREAM_KERNEL_PACKAGE := linux-image-6.12.118+deb12-cloud-amd64-unsigned

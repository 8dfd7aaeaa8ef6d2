# reseed-lab: QEMU device model + guest driver co-development tree for VM snapshot and
# clone safety.  This file is the table of contents; each stage is a script in scripts/.
#
#   make                 build the newest row of base trees and run the demo
#   make check           build every row and run every test; ends with 'N passed, N failed'
#   make ... ROW=6.1     the same for one row (rows and versions: versions.mk)
#   make help            list the targets

include versions.mk

SHELL := /bin/bash
comma := ,

# --- the row: one Linux base and the QEMU of the same Debian release
ROW ?=
R   := $(or $(ROW),$(DEFAULT_ROW))
ifeq ($(filter $(R),$(ROWS)),)
$(error ROW=$(R) is not a row of versions.mk; the rows are: $(ROWS))
endif
CHECK_ROWS := $(or $(ROW),$(ROWS))
QV         := $(QEMU_OF_ROW_$(R))

BUILD      := build
SRC        := $(BUILD)/src
STAMP      := $(BUILD)/stamp
QEMU_SRC   := $(SRC)/qemu-$(QV)
LINUX_SRC  := $(SRC)/linux-$(R)
# make SANITIZE=1 ...: the same QEMU built by clang with ASan, UBSan and --enable-fuzzing,
# in its own build directory; the same build has QEMU's libFuzzer target (make fuzz).
# One build serves the sanitizer qtests and the fuzzer (scripts/build-qemu.sh).
QEMU_SAN_OBJ := $(BUILD)/qemu-$(QV)-san
QEMU_OBJ   := $(if $(SANITIZE),$(QEMU_SAN_OBJ),$(BUILD)/qemu-$(QV))
QEMU_FUZZ_BIN := $(QEMU_SAN_OBJ)/qemu-fuzz-x86_64
FUZZ_SECONDS ?= 600
# 'make check' fuzzes each target of the newest row this long, side by side (docs/robustness.md,
# "Fuzzing")
CHECK_FUZZ_SECONDS ?= 60
# virtio-rng-leak also with packed rings, and with in_order where QEMU has it (9.1)
FUZZ_TARGETS := virtio-rng-leak virtio-rng-leak-packed \
	$(if $(filter 7.%,$(QV)),,virtio-rng-leak-in-order) sev-snp-responder
QEMU_BIN   := $(QEMU_OBJ)/qemu-system-x86_64
# make KASAN=1 ...: the same kernel with KASAN, in its own build directory
# (docs/robustness.md, "Guest kernel debug options").
LINUX_OBJ  := $(BUILD)/linux-$(R)$(if $(KASAN),-kasan)
# The uapi headers the guest programs build against, installed from the row's sources
# (scripts/install-uapi.sh): no kernel build needed, so make audit builds none of ours.
UAPI       := $(BUILD)/uapi-$(R)
UAPI_BUILT := $(UAPI)/.installed
GUEST      := $(BUILD)/guest-$(R)$(if $(KASAN),-kasan)
RESULTS_ALL := $(BUILD)/results
RESULTS    := $(RESULTS_ALL)/$(R)
BZIMAGE    := $(LINUX_OBJ)/arch/x86/boot/bzImage
KERNEL_BUILT := $(LINUX_OBJ)/.reseed-built
UPSTREAM_VMLINUZ := $(BUILD)/upstream-kernel/vmlinuz
INITRAMFS  := $(GUEST)/initramfs.cpio.gz
KPATCHES   := kernel-patches/$(R)
QPATCHES   := qemu-patches/$(QV)
FRAGMENT   := kernel-patches/guest.config $(KPATCHES)/guest.config \
	$(if $(KASAN),kernel-patches/kasan.config)

# Every script that boots a guest (scripts/vmharness.py) takes the row from here.
export RESEED_ROW     := $(R)
export RESEED_QEMU    := $(abspath $(QEMU_OBJ))
export RESEED_QEMU_SRC := $(abspath $(QEMU_SRC))
export RESEED_KERNEL  := $(abspath $(BZIMAGE))
export RESEED_INITRD  := $(abspath $(INITRAMFS))

# Guest programs: every guest-tests/*.c and the kernel's own vDSO getrandom() selftest
# (built from the row's tree, see below); bench_* run only under 'make bench'; the
# attestation tests need the fake SEV-SNP responder and run from scripts/check-attest.py.
KSELFTESTS   := vdso_test_getrandom
GUEST_PROGS  := $(sort $(filter-out kselftest_absent,$(basename $(notdir \
		$(wildcard guest-tests/*.c)))) $(KSELFTESTS))
ATTEST_TESTS := tsm_report sev_vmpck_wipe
# The hostile host's programs need its fault injection: scripts/check-hostile.py.
HOSTILE_TESTS := leak_storm sev_hostile
GUEST_TESTS  := $(filter-out bench_% scenario_% $(ATTEST_TESTS) $(HOSTILE_TESTS),$(GUEST_PROGS))
SNP_CERTS    := $(BUILD)/snp/ask_ark.pem
GUEST_BINS   := $(addprefix $(GUEST)/bin/,$(GUEST_PROGS))
# -Wno-clobbered: 6.12's kselftest_harness.h vforks for the teardown (-Wextra warns on
# its own variables, which the kernel's selftests, built without -Wextra, never see).
GUEST_CFLAGS := -static -O2 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
		-Wno-clobbered -Werror \
		-D_GNU_SOURCE \
		-I $(UAPI)/include -I guest-tests \
		-I $(LINUX_SRC)/tools/testing/selftests

STAGE := scripts/stage.sh
# make -n: the recipes that recurse still run; they print, and the summary has nothing
# to count.
DRY_RUN := $(findstring n,$(firstword -$(MAKEFLAGS)))

.DEFAULT_GOAL := all
.PHONY: all help suites deps sources uapi image rootfs cloud-image userspace epoch-drbg reseed-notify build-each-patch check-series check-help spec-check spec-map qemu kernel guest certs check check-row demo bench libvirt audit \
	check-asan check-asan-row fuzz fuzz-build fuzz-coverage audit-image audit-kernel \
	guest-test scenarios export-patches clean distclean FORCE

# The audit keeps about one core busy, as the demo does: it runs beside the demo, and its
# output follows the demo's.
all: qemu kernel guest $(SNP_CERTS) ## build the row (default: the newest), run the demo and the audit of our kernel
	@$(STAGE) audit[$(R)] scripts/audit.py --kernel $(abspath $(BZIMAGE)) --out $(BUILD)/report \
		>$(BUILD)/audit-$(R).log 2>&1 & audit=$$!; \
	$(STAGE) demo[$(R)] scripts/demo.sh; demo=$$?; \
	wait $$audit; status=$$?; cat $(BUILD)/audit-$(R).log; [ $$demo$$status = 00 ]
	@echo "make: the clone-safety report of our $(R) kernel: $(abspath $(BUILD))/report/index.html"

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
		awk -F':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'
	@echo "  check-SUITE      one suite of make check: $(filter-out check-scenarios,$(ONE_SUITE))"
	@echo "  rows: $(ROWS) (default $(DEFAULT_ROW)); pick one with ROW=..."
	@echo "variables:"
	@echo "  ROW=6.12|6.1     the row of base trees (versions.mk)"
	@echo "  SUITES=a,b       make check: only these suites (make suites lists them)"
	@echo "  KERNEL= MODULES= OUT= CLONES=   make audit (KERNEL= also for scenarios, libvirt)"
	@echo "  IMAGE= OUT= CLONES=             make audit of a disk image (raw or qcow2)"
	@echo "  ONLY=            scenarios: numbers; userspace: mechanisms; libvirt: parts"
	@echo "  T=NAME           make guest-test: the test"
	@echo "  KASAN=1          the guest kernel with KASAN, in its own build directory"
	@echo "  SANITIZE=1       QEMU by clang with ASan, UBSan and libFuzzer, in its own directory"
	@echo "  FUZZ_SECONDS=N   make fuzz: seconds per target (600); FUZZ_SEED=N repeats a run"
	@echo "  BENCH_SECTIONS='2 5'  make bench: only those sections"
	@echo "  RESEED_ACCEL=kvm|tcg  the accelerator, instead of the probe (a boot under KVM)"
	@echo "  RESEED_BUILD_CACHE= RESEED_SOURCE_CACHE=  empty: no build or source cache"
	@echo "                   (default: under XDG_CACHE_HOME or ~/.cache, reseed-lab/); ccache: CCACHE_DIR"

suites: ## the names of make check's suites, for SUITES=a,b
	@echo $(SUITE_NAMES)

# --- 1. packages from Debian's archive (adds deb-src entries when missing)
deps: $(STAMP)/deps ## install the Debian packages the build and the tests need
$(STAMP)/deps: scripts/deps.sh
	@$(STAGE) deps scripts/deps.sh $@

# --- 2. pristine sources as git trees, the series applied as commits.  The recipes run
# every time (FORCE) and touch their target only when the tree changed, so what
# depends on them is rebuilt exactly then.
sources: $(QEMU_SRC)/.git/reseed-series $(LINUX_SRC)/.git/reseed-series ## unpack the row's QEMU and Linux from Debian, apply the series
$(QEMU_SRC)/.git/reseed-series: FORCE | $(STAMP)/deps
	@$(STAGE) sources-qemu[$(QV)] scripts/sources.sh qemu $(QEMU_SRC) $(QPATCHES) \
		'$(QEMU_DEB_VERSION_$(QV))'
$(LINUX_SRC)/.git/reseed-series: FORCE | $(STAMP)/deps
	@$(STAGE) sources-linux[$(R)] scripts/sources.sh linux $(LINUX_SRC) $(KPATCHES) \
		'$(LINUX_DEB_VERSION_$(R))'

# --- 3. the patch loop: commit in build/src/*, then regenerate the patch files
build-each-patch: sources ## build every commit of the row's kernel series on its own, in order
	scripts/build-each-patch.sh $(LINUX_SRC) $(FRAGMENT)

# The series as a maintainer takes them: every patch through the base tree's own
# checkpatch.pl (the kernel's with --strict, QEMU's), and every commit of the kernel
# series compiled, the files it touches, under Debian's configuration of that kernel
# (what our tinyconfig guest never builds: KVM_GUEST, modules, ACPI).  Both are cached;
# a script that ends without its TAP leaves a failing one.  The three run side by side
# (each is mostly one process, and make check runs them at nice 19 behind the suites: one
# after the other they outlasted the suites), their output printed in order afterwards.
SERIES_TAPS := checkpatch-qemu checkpatch-linux distro-build
check-series: $(QEMU_SRC)/.git/reseed-series $(LINUX_SRC)/.git/reseed-series ## checkpatch both series, build the kernel series under Debian's config (ROW=...)
	@mkdir -p $(RESULTS) && rm -f $(foreach t,$(SERIES_TAPS),$(RESULTS)/$(t).tap)
	-@$(STAGE) checkpatch-qemu[$(QV)] scripts/check-patches.sh qemu $(QEMU_SRC) $(QPATCHES) \
		$(RESULTS)/checkpatch-qemu.tap >$(RESULTS)/checkpatch-qemu.out 2>&1 & \
	$(STAGE) checkpatch-linux[$(R)] scripts/check-patches.sh linux $(LINUX_SRC) $(KPATCHES) \
		$(RESULTS)/checkpatch-linux.tap >$(RESULTS)/checkpatch-linux.out 2>&1 & \
	$(STAGE) distro-build[$(R)] scripts/distro-build.sh $(LINUX_SRC) \
		'$(LINUX_DEB_VERSION_$(R))' $(RESULTS)/distro-build.tap >$(RESULTS)/distro-build.out 2>&1 & \
	wait; cat $(foreach t,$(SERIES_TAPS),$(RESULTS)/$(t).out); \
	rm -f $(foreach t,$(SERIES_TAPS),$(RESULTS)/$(t).out)
	@$(foreach t,$(SERIES_TAPS),[ -s $(RESULTS)/$(t).tap ] || \
		printf '1..1\nnot ok 1 - %s: no result (see the log above)\n' $(t) \
		>$(RESULTS)/$(t).tap;)

export-patches: ## regenerate the row's qemu-patches/ and kernel-patches/ from build/src commits
	scripts/export-patches.sh qemu $(QEMU_SRC) $(QPATCHES) '$(QEMU_DEB_VERSION_$(QV))'
	scripts/export-patches.sh linux $(LINUX_SRC) $(KPATCHES) '$(LINUX_DEB_VERSION_$(R))'

# --- 4. QEMU: qemu-system-x86_64 + qemu-img + firmware, minimal device set
qemu: $(QEMU_BIN) ## build the row's patched QEMU (ccache)
$(QEMU_BIN): $(QEMU_SRC)/.git/reseed-series FORCE
	@RESEED_QEMU_SANITIZE=$(SANITIZE) $(STAGE) qemu[$(QV)$(if $(SANITIZE),-san)] \
		scripts/build-qemu.sh $(QEMU_SRC) $(QEMU_OBJ) '$(MESON_DEB_VERSION)'

# The fuzzing build of the same tree (scripts/fuzz.sh)
fuzz-build: $(QEMU_FUZZ_BIN) ## build the row's QEMU fuzz target (libFuzzer, clang, ASan, UBSan)
$(QEMU_FUZZ_BIN): $(QEMU_SRC)/.git/reseed-series FORCE | $(STAMP)/deps
	@RESEED_QEMU_FUZZ=1 $(STAGE) qemu[$(QV)-san] \
		scripts/build-qemu.sh $(QEMU_SRC) $(@D) '$(MESON_DEB_VERSION)'

# --- 5. the guest kernel: tinyconfig + the fragments, KUnit built in.  The script
# rewrites KERNEL_BUILT only when it rebuilt the kernel.
kernel: $(KERNEL_BUILT) ## build the row's patched guest kernel (ccache)
$(KERNEL_BUILT): $(LINUX_SRC)/.git/reseed-series FORCE
	@$(STAGE) kernel[$(R)] scripts/build-kernel.sh $(LINUX_SRC) $(LINUX_OBJ) $(FRAGMENT)

# --- 6. the guest: static test programs in a busybox initramfs
guest: $(INITRAMFS) ## build the guest test programs and the initramfs
uapi: $(UAPI_BUILT)
$(UAPI_BUILT): $(LINUX_SRC)/.git/reseed-series FORCE
	@$(STAGE) uapi[$(R)] scripts/install-uapi.sh $(LINUX_SRC) $(UAPI)

$(GUEST)/bin/%: guest-tests/%.c $(wildcard guest-tests/*.h) $(UAPI_BUILT)
	@mkdir -p $(@D)
	gcc $(GUEST_CFLAGS) -o $@ $< $(filter %.o,$^) $(if $(filter bench_%,$*),-lm)

# The vDSO selftests' folder of the row's tree.  Its parse_vdso.c finds __vdso_getrandom
# for the programs that call it (guest-tests/vdso_getrandom.h); the kernel's own
# getrandom() selftest is built from there with its own flags (its Makefile's).  6.11
# added both the vDSO getrandom() and the test: in an older tree a stand-in reports the
# skip and why, and the programs that call the vDSO say at run time that it has none.
VDSO_SELFTESTS := $(LINUX_SRC)/tools/testing/selftests/vDSO
VDSO_USERS     := scenario_agent bench_epoch_prng scenario_vmclock_peer
$(addprefix $(GUEST)/bin/,$(VDSO_USERS)): $(GUEST)/obj/parse_vdso.o
$(GUEST)/obj/parse_vdso.o: $(VDSO_SELFTESTS)/parse_vdso.c $(UAPI_BUILT)
	@mkdir -p $(@D)
	gcc -O2 -std=gnu99 -D_GNU_SOURCE -c -o $@ $<
# The selftests' sources come with the tree: made by the sources stage (make -n, -j).
$(VDSO_SELFTESTS)/parse_vdso.c: $(LINUX_SRC)/.git/reseed-series ;

$(GUEST)/bin/vdso_test_getrandom: guest-tests/kselftest_absent.c $(UAPI_BUILT)
	@mkdir -p $(@D)
	$(if $(wildcard $(VDSO_SELFTESTS)/vdso_test_getrandom.c), \
		gcc -static -O2 -std=gnu99 -D_GNU_SOURCE -isystem $(LINUX_SRC)/tools/include \
		-isystem $(UAPI)/include -isystem $(LINUX_SRC)/include/uapi -o $@ \
		$(VDSO_SELFTESTS)/vdso_test_getrandom.c $(VDSO_SELFTESTS)/parse_vdso.c, \
		gcc $(GUEST_CFLAGS) -DTEST='"vdso_test_getrandom"' \
		-DREASON='"Linux $(R) has no vDSO getrandom() and no such selftest (6.11 added both)"' \
		-o $@ $<)

$(INITRAMFS): $(GUEST_BINS) guest/init scripts/build-initramfs.sh
	@$(STAGE) initramfs[$(R)] scripts/build-initramfs.sh $(LINUX_SRC) $@ $(GUEST_BINS)

# --- 6b. the real Debian guest of the row (docs/userspace.md): a root file system from
# Debian's archive (mmdebstrap, cached), the user-space suite's programs built here against
# Debian's libraries (dynamically linked: in the guest they run on the image's own), and
# an ext4 disk made of both without loop mounts.
DEBIAN_SUITE := $(DEBIAN_SUITE_$(R))
ROOTFS       := $(BUILD)/rootfs-$(DEBIAN_SUITE)/rootfs.tar
US_BIN       := $(BUILD)/userspace/bin
US_PROGS     := us_agent rand_openssl rand_getrandom rand_arc4random rand_gnutls \
	rand_sodium tls_client tls_tickets epoch_drbg_test rand_go rand_rust RandJava.class
US_LIBS_rand_openssl := -lcrypto
US_LIBS_rand_gnutls  := -lgnutls
US_LIBS_rand_sodium  := -lsodium
US_LIBS_tls_client   := -lssl -lcrypto
US_LIBS_tls_tickets  := -lssl -lcrypto
# agent_common.h's helpers that the agent does not call are unused here
US_CFLAGS    := -O2 -Wall -Wextra -Werror -Wno-unused-function -Wno-unused-variable \
	-D_GNU_SOURCE -I guest-tests -I userspace/guest
EPOCH_DRBG_DEB := $(BUILD)/userspace/reseed-epoch-drbg_0.1-1_amd64.deb
DISK         := $(BUILD)/image-$(R)/disk.ext4
OSSL_TESTS   := $(BUILD)/openssl-tests-$(DEBIAN_SUITE)
image: $(DISK) ## build the row's Debian guest image (systemd, the user-space suite)
rootfs: $(ROOTFS)

# A Debian image with a cloud image's layout and Debian's own kernel, nothing of ours:
# what the image audit (make audit IMAGE=) is tested on.  Raw and sparse: built without
# QEMU, beside the compiles; the test converts it to qcow2 (scripts/check-report.py).
CLOUD_IMAGE := $(BUILD)/cloud-image-$(DEBIAN_SUITE)/disk.raw
cloud-image: $(CLOUD_IMAGE) ## a Debian image with Debian's kernel (GPT, /boot), the image audit's test
$(CLOUD_IMAGE): userspace/debian/$(DEBIAN_SUITE).packages scripts/build-cloud-image.sh \
		scripts/build-rootfs.sh | $(STAMP)/deps
	@$(STAGE) cloud-image[$(DEBIAN_SUITE)] scripts/build-cloud-image.sh $(DEBIAN_SUITE) $@
# The programs the image audit brings into the image (scripts/audit-image.py)
AUDIT_IMAGE_PROGS := $(addprefix $(US_BIN)/,us_agent rand_openssl rand_getrandom \
	rand_arc4random rand_gnutls rand_sodium tls_client rand_go rand_rust RandJava.class)

$(ROOTFS): userspace/debian/$(DEBIAN_SUITE).packages scripts/build-rootfs.sh | $(STAMP)/deps
	@$(STAGE) rootfs[$(DEBIAN_SUITE)] scripts/build-rootfs.sh $(DEBIAN_SUITE) $(@D)

$(US_BIN)/epoch_drbg_test: userspace/epoch-drbg/epoch_drbg_test.c | $(STAMP)/deps
	@mkdir -p $(@D)
	gcc $(US_CFLAGS) -o $@ $< -lcrypto -lpthread

# The Go consumer: static, built with the Go of versions.mk, offline (no toolchain or
# module download), its build cache where Go keeps it (XDG_CACHE_HOME/go-build)
$(US_BIN)/rand_go: $(wildcard userspace/guest/rand_go/*.go) userspace/guest/rand_go/go.mod \
		| $(STAMP)/deps
	@mkdir -p $(@D)
	cd userspace/guest/rand_go && GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0 \
		$(GO) build -trimpath -buildvcs=false -o $(abspath $@) .

# The Java consumer: bytecode for Java 17 on, so one class serves Debian 12's OpenJDK 17
# and Debian 13's 21 (the images' own JVMs run it)
$(US_BIN)/RandJava.class: userspace/guest/RandJava.java | $(STAMP)/deps
	@mkdir -p $(@D)
	javac --release 17 -Xlint:all -Werror -d $(@D) $<

# The Rust consumer: Debian's cargo and rustc (not a rustup one on PATH), Debian's
# packaged crates (userspace/guest/rand_rust/.cargo/config.toml), offline
$(US_BIN)/rand_rust: $(wildcard userspace/guest/rand_rust/src/*.rs) \
		userspace/guest/rand_rust/Cargo.toml userspace/guest/rand_rust/.cargo/config.toml \
		| $(STAMP)/deps
	@mkdir -p $(@D)
	cd userspace/guest/rand_rust && RUSTC=/usr/bin/rustc CARGO_HOME=$(abspath $(BUILD)/cargo) \
		/usr/bin/cargo build --release --offline --quiet \
		--target-dir $(abspath $(BUILD)/userspace/rust)
	cp $(BUILD)/userspace/rust/release/rand_rust $@

$(US_BIN)/%: userspace/guest/%.c $(wildcard userspace/guest/*.h) guest-tests/agent_common.h \
		| $(STAMP)/deps
	@mkdir -p $(@D)
	gcc $(US_CFLAGS) -o $@ $< $(US_LIBS_$*)

# The EPOCH-DRBG OpenSSL provider and its Debian package (docs/userspace.md)
epoch-drbg: $(EPOCH_DRBG_DEB) ## build the EPOCH-DRBG OpenSSL provider and its Debian package
$(EPOCH_DRBG_DEB): userspace/epoch-drbg/epoch_drbg.c userspace/epoch-drbg/openssl.cnf \
		$(wildcard userspace/epoch-drbg/debian/*) scripts/build-epoch-drbg.sh scripts/build-deb.sh \
		| $(STAMP)/deps
	@$(STAGE) epoch-drbg scripts/build-epoch-drbg.sh $(@D)

# The reseed-notify daemon and its Debian package (docs/userspace.md)
RESEED_NOTIFY_DEB := $(BUILD)/userspace/reseed-notify_0.1-1_amd64.deb
reseed-notify: $(RESEED_NOTIFY_DEB) ## build the reseed-notify daemon and its Debian package
$(RESEED_NOTIFY_DEB): userspace/reseed-notify/reseed_notify.c \
		userspace/reseed-notify/reseed-notify.service \
		$(wildcard userspace/reseed-notify/debian/*) scripts/build-reseed-notify.sh \
		scripts/build-deb.sh | $(STAMP)/deps
	@$(STAGE) reseed-notify scripts/build-reseed-notify.sh $(@D)

# The provider on this machine, whose kernel has no RNG epoch: the fallback's test
EPOCH_DRBG_HOST_CONF := $(BUILD)/userspace/host-openssl.cnf
$(EPOCH_DRBG_HOST_CONF): userspace/epoch-drbg/openssl.cnf $(EPOCH_DRBG_DEB)
	sed 's|/etc/ssl/openssl.cnf.distrib|/etc/ssl/openssl.cnf|; s|/usr/lib/.*/epoch-drbg.so|$(abspath $(@D))/epoch-drbg.so|' $< >$@

$(DISK): $(ROOTFS) $(addprefix $(US_BIN)/,$(US_PROGS)) userspace/guest/consumers \
		userspace/guest/reseed-us.service userspace/guest/reseed-us-tls.service \
		userspace/guest/rand_python.py scripts/build-disk.sh \
		$(wildcard userspace/guest/hooks/*) $(EPOCH_DRBG_DEB) $(RESEED_NOTIFY_DEB) \
		$(OSSL_TESTS)/version userspace/guest/ossl-test userspace/guest/openssl-hash-drbg.cnf
	@mkdir -p $(@D)
	@RESEED_HOST_PACKAGES="$(GO_PACKAGE) librust-rand-dev" RESEED_OPENSSL_TESTS=$(OSSL_TESTS) \
		$(STAGE) image[$(R)] scripts/build-disk.sh $(ROOTFS) \
		$(US_BIN) $@ $(EPOCH_DRBG_DEB) $(RESEED_NOTIFY_DEB)

# OpenSSL's own rand, DRBG and EVP_RAND tests, from the source of the image's OpenSSL,
# linked against the image's libcrypto (docs/userspace.md, "Tests and speed")
$(OSSL_TESTS)/version: $(ROOTFS) scripts/build-openssl-tests.sh
	@$(STAGE) openssl-tests[$(DEBIAN_SUITE)] scripts/build-openssl-tests.sh $(<D) $(@D)

# --- the fake AMD certificate chain (ARK, ASK, VCEK) the SEV-SNP responder signs with
certs: $(SNP_CERTS) ## make the fake AMD ARK/ASK/VCEK in build/snp (openssl)
$(SNP_CERTS): scripts/snp-certs.sh | $(STAMP)/deps
	@$(STAGE) certs scripts/snp-certs.sh $(@D)

$(UPSTREAM_VMLINUZ): versions.mk scripts/fetch-kernel.sh | $(STAMP)/deps
	@$(STAGE) upstream-kernel scripts/fetch-kernel.sh $(UPSTREAM_KERNEL_PACKAGE) $@

# --- 7./8. tests: each suite writes build/results/<row>/<suite>.tap; the summary,
# over every row, comes last.  A row whose build fails still lets the others run.
# scripts/check-lanes.py runs the suites of every row two at a time (most boot one
# single-vCPU TCG guest after another and keep one core busy), the longest first; the
# leak storm's rate and the fuzzers have the machine to themselves.  The next row's QEMU
# and kernel build at nice 10 beside the first row's suites (its log:
# build/prebuild-<row>.log): a cold run saves most of that build's time, a warm one
# restores it from the caches in seconds.  Each row's series checks (checkpatch, the
# Debian-config build) run at nice 19, below both, and the summary waits for them.
# make check SUITES=qtest,guest: only those suites, by the names 'make check' prints
# (without the row); unset, all of them.  A recipe line '$(call skip,NAME) || ...' runs only
# when NAME is one of them.
SUITE_NAMES := qtest qtest-asan fuzz guest guest-leak-off guest-dma guest-bounce attest \
	hostile differential migrate-unpatched scenario userspace libvirt report series conformance \
	spec help
SUITE_LIST  := $(subst $(comma), ,$(SUITES))
ifneq ($(filter-out $(SUITE_NAMES),$(SUITE_LIST)),)
$(error SUITES=$(SUITES): no suite named $(filter-out $(SUITE_NAMES),$(SUITE_LIST)); the suites are: $(SUITE_NAMES))
endif
skip = $(if $(SUITES),$(if $(filter $(1),$(SUITE_LIST)),false,true),false)

# make check-qtest, check-guest, check-scenario, ...: one suite (check SUITES=NAME), every row
# or ROW=; check-series and check-help are the stages of their own (below).
ONE_SUITE := $(addprefix check-,$(filter-out series help,$(SUITE_NAMES))) check-scenarios
.PHONY: $(ONE_SUITE)
$(ONE_SUITE):
	@$(MAKE) --no-print-directory check SUITES=$(patsubst scenarios,scenario,$(@:check-%=%))

check: ## build and test every row (ROW=...: one; SUITES=a,b: only those); ends with 'N passed, N failed'
	@rm -rf $(RESULTS_ALL) && mkdir -p $(RESULTS_ALL)
	@$(if $(DRY_RUN),:,$(call skip,userspace)) || { $(MAKE) --no-print-directory deps && \
		echo "check: the Debian root file systems and the image audit's test image" \
			"(nice 19) beside the builds:" \
			"$(BUILD)/rootfs.log"; \
		(for r in $(CHECK_ROWS); do nice -n 19 $(MAKE) --no-print-directory rootfs ROW=$$r; \
			done; $(call skip,report) || nice -n 19 $(MAKE) --no-print-directory \
			cloud-image ROW=$(DEFAULT_ROW)) >$(BUILD)/rootfs.log 2>&1 & }
	@failed=; scripts/check-lanes.py $(if $(DRY_RUN),--dry-run) --default-row $(DEFAULT_ROW) \
		--suites '$(SUITES)' $(CHECK_ROWS) || failed=1; \
	for r in $(CHECK_ROWS); do \
		pid=$$(cat $(RESULTS_ALL)/$$r/series.pid 2>/dev/null) && \
			while kill -0 $$pid 2>/dev/null; do sleep 2; done; \
		[ -f $(RESULTS_ALL)/$$r/series.log ] || continue; \
		echo "==> check-series[$$r] (beside the suites, nice 19): $(RESULTS_ALL)/$$r/series.log"; \
		cat $(RESULTS_ALL)/$$r/series.log; \
	done; \
	$(call skip,spec) || $(STAGE) check-spec scripts/tap-step.sh $(RESULTS_ALL)/spec.tap \
		"docs/spec: rng-leak.md, statements.tsv and conformance-map.md agree with rng-leak.tex" \
		$(MAKE) --no-print-directory spec-check; \
	$(if $(DRY_RUN),,$(call skip,help) || $(STAGE) check-help scripts/check-help.sh \
		$(RESULTS_ALL)/help.tap || true;) \
	$(if $(DRY_RUN),exit 0;) scripts/summary.py $(RESULTS_ALL) $(CHECK_ROWS) || exit 1; \
	[ -z "$$failed" ]

# Every program of the tree answers -h and --help, and writes nothing (build/ included:
# run it when nothing else builds there).
# The spec's text, its statements and the committed map agree: no build, seconds.
spec-check: ## docs/spec: rng-leak.md, statements.tsv, conformance-map.md and the counts agree
	scripts/spec-md.py --check docs/spec/statements.tsv docs/spec/rng-leak.tex docs/spec/rng-leak.md
	scripts/conformance.py --map docs/spec/statements.tsv docs/spec/conformance-map.md --check

spec-map: ## regenerate docs/spec/conformance-map.md from statements.tsv
	scripts/conformance.py --map docs/spec/statements.tsv docs/spec/conformance-map.md

check-help: ## every script's -h/--help: exit 0, usage printed, nothing written
	@mkdir -p $(RESULTS_ALL) && scripts/check-help.sh $(RESULTS_ALL)/help.tap

# QEMU under AddressSanitizer and UndefinedBehaviorSanitizer: reports abort.
SANITIZER_OPTS := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
# What either sanitizer prints when it reports (grep -E).
SANITIZER_REPORT := ERROR: AddressSanitizer|runtime error:|SUMMARY: UndefinedBehavior
# The rows whose qtests 'make check' runs under ASan and UBSan: each costs a QEMU build
# (5 min cold), and the cold run must stay under 45 min; 'make check-asan' does any row.
CHECK_ASAN_ROWS := $(DEFAULT_ROW)

# The user-space suite in make check: the negative control and the leak queues, 4 clones
# each (about a minute a row); make userspace runs every mechanism with 8.
CHECK_US_MECHANISMS := none,leak
CHECK_US_CLONES     := 4

# virtio-rng through the DMA API (VIRTIO_F_ACCESS_PLATFORM, no vIOMMU: direct DMA), for the
# DMA API's debug checks and, with swiotlb=force, bounced DMA.
RNG_DMA_API := virtio-rng-pci,id=rng0,iommu_platform=on,disable-legacy=on

# One row's suites (make check runs every row's this way, the rows' suites in the same
# two slots): scripts/check-lanes.py runs check-row-gate, check-row-begin, each suite-NAME
# (after its suite-prep-NAME, if it has one) and suite-conformance last.
check-row: ## one row's suites, two at a time (make check ROW=... runs it)
	@scripts/check-lanes.py --default-row $(DEFAULT_ROW) --suites '$(SUITES)' $(R)

check-row-gate: qemu kernel guest $(SNP_CERTS) $(UPSTREAM_VMLINUZ)

check-row-begin:
	@rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	@$(call skip,series) || { (nice -n 19 $(MAKE) --no-print-directory check-series ROW=$(R) \
		>$(RESULTS)/series.log 2>&1; rm -f $(RESULTS)/series.pid) & \
		echo $$! >$(RESULTS)/series.pid; }

# The suites, one target each; the builds some of them need first, without a slot.
suite-qtest:
	-@$(STAGE) check-qtest[$(R)] scripts/check-qtest.sh $(QEMU_SRC) $(QEMU_OBJ) $(RESULTS)/qtest.tap
suite-prep-qtest-asan:
	@$(if $(filter $(R),$(CHECK_ASAN_ROWS)),$(MAKE) --no-print-directory qemu ROW=$(R) SANITIZE=1 || \
		printf '1..1\nnot ok 1 - the QEMU with ASan and UBSan did not build\n' \
		>$(RESULTS)/qtest-asan.tap,printf '1..1\nok 1 - qtests under ASan and UBSan # SKIP %s\n' \
		"not in make check on this row (the cold budget): make check-asan ROW=$(R)" \
		>$(RESULTS)/qtest-asan.tap)
suite-qtest-asan:
	-@[ -f $(RESULTS)/qtest-asan.tap ] || { $(SANITIZER_OPTS) $(STAGE) check-qtest-asan[$(R)] \
		scripts/check-qtest.sh $(QEMU_SRC) $(QEMU_SAN_OBJ) $(RESULTS)/qtest-asan.tap; \
		scripts/tap-step.sh $(RESULTS)/qtest-asan-reports.tap \
		"no sanitizer report in the output of the qtests under ASan and UBSan" \
		sh -c '! grep -lE "$(SANITIZER_REPORT)" $(RESULTS)/qtest-asan.log'; }
suite-prep-fuzz:
	@$(if $(filter $(R),$(DEFAULT_ROW)),$(MAKE) --no-print-directory fuzz-build ROW=$(R) || \
		printf '1..1\nnot ok 1 - the QEMU fuzz target did not build\n' >$(RESULTS)/fuzz.tap,:)
suite-fuzz:
	-@$(if $(filter $(R),$(DEFAULT_ROW)),[ -f $(RESULTS)/fuzz.tap ] || $(STAGE) check-fuzz[$(R)] \
		sh -c '$(foreach t,$(FUZZ_TARGETS),scripts/fuzz.sh $(QEMU_FUZZ_BIN) \
		$(CHECK_FUZZ_SECONDS) $(BUILD)/fuzz/$(QV) $(t) >$(RESULTS)/fuzz-$(t).tap & ) wait',:)
suite-guest:
	-@$(STAGE) check-guest[$(R)] scripts/guest-test.py --kunit --name check-guest \
		--tap $(RESULTS)/guest.tap $(subst $(eval) ,$(comma),$(GUEST_TESTS))
suite-guest-leak-off:
	-@$(STAGE) check-guest-leak-off[$(R)] scripts/guest-test.py --name check-guest-leak-off \
		--device virtio-rng-pci,id=rng0,leak=off --tap $(RESULTS)/guest-leak-off.tap epoch_abi
suite-guest-dma:
	-@$(STAGE) check-guest-dma[$(R)] scripts/guest-test.py --name check-guest-dma \
		--device $(RNG_DMA_API) --tap $(RESULTS)/guest-dma.tap epoch_abi
suite-guest-bounce:
	-@$(STAGE) check-guest-bounce[$(R)] scripts/guest-test.py --name check-guest-bounce \
		--device $(RNG_DMA_API) --append swiotlb=force --tap $(RESULTS)/guest-bounce.tap epoch_abi
suite-attest:
	-@$(STAGE) check-attest[$(R)] scripts/check-attest.py $(RESULTS)
# The storm's figure is a rate against a boot without it: alone on the machine (check-lanes.py).
suite-hostile:
	-@$(STAGE) check-hostile[$(R)] scripts/check-hostile.py $(RESULTS) --only leak,snp
suite-hostile-storm:
	-@$(STAGE) check-hostile-storm[$(R)] scripts/check-hostile.py $(RESULTS) --only storm
suite-differential:
	-@$(STAGE) check-differential[$(R)] scripts/tap-step.sh $(RESULTS)/differential.tap \
		"io_uring_sysctl: same results on our $(R) and on Debian's $(UPSTREAM_KERNEL_PACKAGE)" \
		scripts/differential.sh io_uring_sysctl $(BZIMAGE) $(UPSTREAM_VMLINUZ) $(INITRAMFS)
suite-migrate-unpatched:
	-@$(STAGE) check-migrate-unpatched[$(R)] scripts/check-migrate-unpatched.py \
		$(RESULTS)/migrate-unpatched.tap
suite-scenario:
	-@$(STAGE) check-scenarios[$(R)] snapshot-scenarios/run.py --tap $(RESULTS)/scenario.tap
suite-prep-userspace:
	@$(MAKE) --no-print-directory image ROW=$(R) || \
		printf '1..1\nnot ok 1 - the Debian guest image of row $(R) did not build\n' \
		>$(RESULTS)/userspace.tap
suite-userspace:
	-@[ -f $(RESULTS)/userspace.tap ] || $(STAGE) check-userspace[$(R)] \
		snapshot-scenarios/userspace.py --mechanisms $(CHECK_US_MECHANISMS) \
		--clones $(CHECK_US_CLONES) --provider-test --tap $(RESULTS)/userspace.tap \
		--json $(RESULTS)/userspace.json
	-@$(if $(filter $(R),$(DEFAULT_ROW)),{ $(MAKE) --no-print-directory \
		$(EPOCH_DRBG_HOST_CONF) $(US_BIN)/epoch_drbg_test && $(STAGE) check-epoch-drbg-host \
		sh -c 'OPENSSL_CONF=$(EPOCH_DRBG_HOST_CONF) $(US_BIN)/epoch_drbg_test \
		>$(RESULTS)/epoch-drbg-host.tap'; },:)
suite-libvirt:
	-@$(if $(filter $(R),$(DEFAULT_ROW)),$(STAGE) check-libvirt[$(R)] \
		snapshot-scenarios/libvirt_scenarios.py --tap $(RESULTS)/libvirt.tap \
		--json $(RESULTS)/libvirt.json,printf '1..1\nok 1 - libvirt scenarios # SKIP %s\n' \
		"newest row only in make check (the cold budget): make libvirt ROW=$(R)" \
		>$(RESULTS)/libvirt.tap)
suite-prep-report:
	-@$(if $(filter $(R),$(DEFAULT_ROW)),$(MAKE) --no-print-directory \
		cloud-image $(AUDIT_IMAGE_PROGS) ROW=$(R),:)
# The report reads the user-space suite's figures when they are there (make check runs
# that suite first: it is the longer).
suite-report:
	-@$(if $(filter $(R),$(DEFAULT_ROW)),$(STAGE) check-report[$(R)] scripts/check-report.py \
		--tap $(RESULTS)/report.tap --clones 2 --image $(CLOUD_IMAGE)='!safe' \
		--qemu-img $(QEMU_OBJ)/qemu-img $$(test -f $(RESULTS)/userspace.json && \
		echo --userspace $(RESULTS)/userspace.json) $(RESULTS)/report \
		$(abspath $(BZIMAGE))=safe $(UPSTREAM_VMLINUZ)='!safe',printf \
		'1..1\nok 1 - the audit and its report # SKIP %s\n' \
		"newest row only in make check (the cold budget): make audit ROW=$(R) KERNEL=..." \
		>$(RESULTS)/report.tap)
suite-conformance:
	-@$(STAGE) check-conformance[$(R)] scripts/tap-step.sh $(RESULTS)/zz-conformance.tap \
		"conformance: every normative statement has a passing test ($(RESULTS)/conformance.md)" \
		scripts/conformance.py docs/spec/statements.tsv $(RESULTS) $(RESULTS)/conformance.md

# --- QEMU under AddressSanitizer and UndefinedBehaviorSanitizer: 'make check'
# runs the qtests under it; this adds scenarios 1-3 and 9 (docs/robustness.md, "Sanitizers").
SAN_RESULTS := $(RESULTS_ALL)-san/$(R)
check-asan: ## our QEMU with ASan+UBSan: qtests, scenarios 1-3 and 9, zero reports (ROW=...)
	@for r in $(CHECK_ROWS); do \
		$(MAKE) --no-print-directory check-asan-row ROW=$$r SANITIZE=1 || exit; done

check-asan-row: qemu kernel guest $(SNP_CERTS)
	@rm -rf $(SAN_RESULTS) $(BUILD)/run/$(R) && mkdir -p $(SAN_RESULTS)
	@scripts/tap-step.sh $(SAN_RESULTS)/instrumented.tap \
		"$(QEMU_BIN) links libasan and libubsan" \
		sh -c 'ldd $(QEMU_BIN) | grep -q libasan && ldd $(QEMU_BIN) | grep -q libubsan'
	-@$(SANITIZER_OPTS) $(STAGE) check-asan-qtest[$(R)] scripts/check-qtest.sh \
		$(QEMU_SRC) $(QEMU_OBJ) $(SAN_RESULTS)/qtest.tap
	-@$(SANITIZER_OPTS) $(STAGE) check-asan-scenarios[$(R)] snapshot-scenarios/run.py \
		--only 1,2,3,9 --tap $(SAN_RESULTS)/scenario.tap
	@scripts/tap-step.sh $(SAN_RESULTS)/reports.tap \
		"no sanitizer report in the qtests' and the scenarios' QEMU output ($(R))" \
		sh -c '! grep -rlE "$(SANITIZER_REPORT)" $(SAN_RESULTS) $(BUILD)/run/$(R)'
	@scripts/summary.py $(RESULTS_ALL)-san $(R)

fuzz: fuzz-build $(SNP_CERTS) ## fuzz the devices, FUZZ_SECONDS (600) per target (ROW=...)
	@mkdir -p $(RESULTS_ALL)-fuzz
	set -o pipefail; scripts/fuzz.sh $(QEMU_FUZZ_BIN) $(FUZZ_SECONDS) $(BUILD)/fuzz/$(QV) \
		$(FUZZ_TARGETS) | tee $(RESULTS_ALL)-fuzz/$(R).tap

# The same target with clang's source coverage, to count the lines the corpus reaches
QEMU_COV_OBJ := $(BUILD)/qemu-$(QV)-cov
QEMU_COV_BIN := $(QEMU_COV_OBJ)/qemu-fuzz-x86_64
fuzz-coverage: $(SNP_CERTS) ## line coverage of our devices by the fuzz corpus (ROW=...)
	@RESEED_QEMU_FUZZ=coverage $(STAGE) qemu[$(QV)-cov] \
		scripts/build-qemu.sh $(QEMU_SRC) $(QEMU_COV_OBJ) '$(MESON_DEB_VERSION)'
	@mkdir -p $(RESULTS_ALL)-fuzz
	scripts/fuzz-coverage.sh $(QEMU_COV_BIN) $(QEMU_SRC) $(BUILD)/fuzz/$(QV) \
		$(RESULTS_ALL)-fuzz/$(R)-coverage.txt

scenarios: qemu kernel guest $(UPSTREAM_VMLINUZ) ## run the snapshot scenarios: make scenarios [KERNEL=img] [ONLY=3,6]
	snapshot-scenarios/run.py $(if $(KERNEL),--kernel $(KERNEL)) $(if $(ONLY),--only $(ONLY))

# The arguments are checked before anything is built.  scripts/audit.py exits 0 clone-safe,
# 1 racy, 2 unsafe, 3 no verdict; make itself exits 0 only for clone-safe.
audit: ## is a guest kernel (or a disk image) clone-safe? make audit KERNEL=/boot/vmlinuz-V [MODULES=/lib/modules/V] | IMAGE=disk.qcow2 [CLONES=N] [OUT=DIR]
	@test -n "$(KERNEL)$(IMAGE)" || { echo "usage: make audit KERNEL=BZIMAGE [MODULES=DIR]" \
		"[CLONES=N] [OUT=DIR] [ROW=...]: measures the kernel's clone safety, writes a" \
		"report to OUT (default build/audit/NAME-VERSION); or make audit IMAGE=DISK" \
		"[CLONES=N] [OUT=DIR]: a raw or qcow2 disk image, its own kernel and libraries" \
		"(default OUT build/audit/image-FOLDER-NAME)" >&2; exit 2; }
	@test -z "$(KERNEL)" || test -z "$(IMAGE)" || { echo "audit: KERNEL= or IMAGE=, not" \
		"both (an image is audited with its own kernel)" >&2; exit 2; }
	@test -z "$(IMAGE)" || test -f "$(IMAGE)" || { echo "audit: no such image:" \
		"IMAGE=$(IMAGE)" >&2; exit 2; }
	@test -z "$(IMAGE)" || test -z "$(MODULES)" || { echo "audit: MODULES= goes with" \
		"KERNEL=; an image's modules are its own" >&2; exit 2; }
	@case "$(CLONES)" in ""|[2-9]|[1-9][0-9]) ;; *) echo "audit: CLONES=$(CLONES):" \
		"a number of clones from 2 to 99" >&2; exit 2 ;; esac
	@test -z "$(IMAGE)" || $(MAKE) --no-print-directory audit-image
	@test -n "$(IMAGE)" || $(MAKE) --no-print-directory audit-kernel

audit-image: $(AUDIT_IMAGE_PROGS)
	@$(MAKE) --no-print-directory qemu guest ROW=$(R)
	scripts/audit-image.py --image $(IMAGE) $(if $(CLONES),--clones $(CLONES)) \
		$(if $(OUT),--out $(OUT))

audit-kernel:
	@test -f "$(KERNEL)" || { echo "audit: no such kernel: KERNEL=$(KERNEL)" >&2; exit 2; }
	@test -z "$(MODULES)" || test -d "$(MODULES)" || \
		{ echo "audit: no such modules directory: MODULES=$(MODULES)" >&2; exit 2; }
	@case "$(CLONES)" in ""|[2-9]|[1-9][0-9]) ;; *) echo "audit: CLONES=$(CLONES):" \
		"a number of clones from 2 to 99" >&2; exit 2 ;; esac
	@$(MAKE) --no-print-directory qemu guest ROW=$(R)
	scripts/audit.py --kernel $(KERNEL) $(if $(MODULES),--modules $(MODULES)) \
		$(if $(CLONES),--clones $(CLONES)) $(if $(OUT),--out $(OUT))

userspace: qemu kernel image ## what clones of real Debian guests share, per library: make userspace [ONLY=none,leak] [CLONES=8]
	snapshot-scenarios/userspace.py --provider-test $(if $(ONLY),--mechanisms $(ONLY)) \
		$(if $(CLONES),--clones $(CLONES)) --json $(BUILD)/userspace/$(R).json

libvirt: qemu kernel guest ## the scenarios through a private libvirtd: make libvirt [CLONES=32] [ONLY=clones]
	snapshot-scenarios/libvirt_scenarios.py $(if $(CLONES),--clones $(CLONES)) \
		$(if $(ONLY),--only $(ONLY)) $(if $(KERNEL),--kernel $(KERNEL))

guest-test: qemu kernel guest $(SNP_CERTS) ## boot the guest and run one test: make guest-test T=smoke
	@test -n "$(T)" || { echo "usage: make guest-test T=NAME [ROW=...] (one of: $(GUEST_TESTS) $(ATTEST_TESTS))"; exit 2; }
	scripts/guest-test.py --name guest-test-$(T) $(if $(filter $(T),$(ATTEST_TESTS)),--snp) $(T)

demo: qemu kernel guest $(SNP_CERTS) ## boot the guest and tell what happened, in plain words
	@$(STAGE) demo[$(R)] scripts/demo.sh

bench: $(SNP_CERTS) ## run the benchmarks on every row (ROW=...: one), side by side
	@for r in $(CHECK_ROWS); do $(MAKE) --no-print-directory qemu kernel guest image ROW=$$r || exit; done
	@$(MAKE) --no-print-directory $(EPOCH_DRBG_HOST_CONF) $(US_BIN)/epoch_drbg_test
	@$(STAGE) bench scripts/bench.sh $(foreach r,$(CHECK_ROWS),$(r):$(QEMU_OF_ROW_$(r)))

clean: ## remove test results and guest run directories (keeps the builds)
	rm -rf $(RESULTS_ALL) $(BUILD)/run

distclean: ## remove build/ entirely (sources, builds, stamps)
	rm -rf $(BUILD)

# --- the VMClock peer: Debian's prebuilt Linux 7 cloud kernel, whose ptp_vmclock maps
# VMClock's vm_generation_counter into user space, across clones of one saved state
# (snapshot-scenarios/vmclock_peer.py).  Its own initramfs: the peer program and the
# modules (ptp_vmclock and what it depends on) that guest/init loads before it.
.PHONY: peer-vmclock
UPSTREAM7      := $(BUILD)/upstream-kernel-7
PEER_INITRAMFS := $(BUILD)/guest-7/initramfs.cpio.gz
$(UPSTREAM7)/vmlinuz: scripts/fetch-kernel-7.sh | $(STAMP)/deps
	@$(STAGE) upstream-kernel-7 scripts/fetch-kernel-7.sh $(@D)
$(PEER_INITRAMFS): $(GUEST)/bin/scenario_vmclock_peer $(UPSTREAM7)/vmlinuz guest/init \
		scripts/build-initramfs.sh
	@$(STAGE) initramfs[7] scripts/build-initramfs.sh $(LINUX_SRC) $@ $< \
		$$(sed 's|^|$(UPSTREAM7)/modules/|' $(UPSTREAM7)/modules/order)
# The same program, then, on the row's own kernel (its initramfs carries it; 0043 gives it
# the same /dev/vmclock0): the peer's figures next to ours.
peer-vmclock: qemu kernel guest $(PEER_INITRAMFS) ## Linux 7's VMClock counter as the clones' guard (the peer), then ours
	snapshot-scenarios/vmclock_peer.py --kernel $(UPSTREAM7)/vmlinuz --initrd $(PEER_INITRAMFS)
	snapshot-scenarios/vmclock_peer.py --kernel $(BZIMAGE) --initrd $(INITRAMFS)

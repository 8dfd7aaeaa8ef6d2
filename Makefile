# reseed-lab: QEMU device model + guest driver co-development tree for VM snapshot and
# clone safety.  This file is the table of contents; each stage is a script in scripts/.
#
#   make            build everything and run the demo
#   make check      build everything and run every test; ends with 'N passed, N failed'
#   make help       list the targets

include versions.mk

SHELL      := /bin/bash
BUILD      := build
SRC        := $(BUILD)/src
STAMP      := $(BUILD)/stamp
QEMU_SRC   := $(SRC)/qemu
LINUX_SRC  := $(SRC)/linux
QEMU_OBJ   := $(BUILD)/qemu
# make KASAN=1 ...: the same kernel with KASAN, in its own build directory (README).
LINUX_OBJ  := $(BUILD)/linux$(if $(KASAN),-kasan)
HEADERS    := $(LINUX_OBJ)-headers
GUEST      := $(BUILD)/guest
RESULTS    := $(BUILD)/results
BZIMAGE    := $(LINUX_OBJ)/arch/x86/boot/bzImage
UPSTREAM_VMLINUZ := $(BUILD)/upstream-kernel/vmlinuz
INITRAMFS  := $(GUEST)/initramfs.cpio.gz
FRAGMENT   := kernel-patches/guest.config $(if $(KASAN),kernel-patches/kasan.config)

# Guest programs: every guest-tests/*.c; bench_* run only under 'make bench'; the
# attestation tests need the fake SEV-SNP responder and run from scripts/check-attest.py.
GUEST_PROGS  := $(sort $(basename $(notdir $(wildcard guest-tests/*.c))))
ATTEST_TESTS := tsm_report sev_vmpck_wipe
GUEST_TESTS  := $(filter-out bench_% scenario_% $(ATTEST_TESTS),$(GUEST_PROGS))
SNP_CERTS    := $(BUILD)/snp/ask_ark.pem
GUEST_BINS   := $(addprefix $(GUEST)/bin/,$(GUEST_PROGS))
GUEST_CFLAGS := -static -O2 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -Werror \
		-D_GNU_SOURCE \
		-I $(HEADERS)/include -I guest-tests \
		-I $(LINUX_SRC)/tools/testing/selftests

STAGE := scripts/stage.sh

.DEFAULT_GOAL := all
.PHONY: all help deps sources qemu kernel guest certs check check-qtest check-guest \
	demo bench guest-test scenarios export-patches clean distclean FORCE

all: qemu kernel guest $(SNP_CERTS) ## build everything and run the demo
	@$(STAGE) demo scripts/demo.sh

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
		awk -F':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'

# --- 1. packages from Debian's archive (adds deb-src entries when missing)
deps: $(STAMP)/deps ## install the Debian packages the build and the tests need
$(STAMP)/deps: scripts/deps.sh
	@$(STAGE) deps scripts/deps.sh $@

# --- 2. pristine sources as git trees, the series applied as commits
sources: $(STAMP)/deps ## unpack QEMU and Linux from Debian and apply the series
	@$(STAGE) sources-qemu scripts/sources.sh qemu $(QEMU_SRC) qemu-patches '$(QEMU_DEB_VERSION)'
	@$(STAGE) sources-linux scripts/sources.sh linux $(LINUX_SRC) kernel-patches '$(LINUX_DEB_VERSION)'

# --- 3. the patch loop: commit in build/src/*, then regenerate the patch files
export-patches: ## regenerate qemu-patches/ and kernel-patches/ from build/src commits
	scripts/export-patches.sh qemu $(QEMU_SRC) qemu-patches '$(QEMU_DEB_VERSION)'
	scripts/export-patches.sh linux $(LINUX_SRC) kernel-patches '$(LINUX_DEB_VERSION)'

# --- 4. QEMU: qemu-system-x86_64 + qemu-img + firmware, minimal device set
qemu: sources ## build the patched QEMU (ccache)
	@$(STAGE) qemu scripts/build-qemu.sh $(QEMU_SRC) $(QEMU_OBJ)

# --- 5. the guest kernel: tinyconfig + kernel-patches/guest.config, KUnit built in
kernel: sources ## build the patched guest kernel (ccache)
	@$(STAGE) kernel scripts/build-kernel.sh $(LINUX_SRC) $(LINUX_OBJ) $(FRAGMENT)

# --- 6. the guest: static test programs in a busybox initramfs
guest: kernel $(INITRAMFS) ## build the guest test programs and the initramfs

$(GUEST)/bin/%: guest-tests/%.c $(wildcard guest-tests/*.h) $(LINUX_OBJ)/.reseed-built
	@mkdir -p $(@D)
	gcc $(GUEST_CFLAGS) -o $@ $< $(if $(filter bench_%,$*),-lm)

$(INITRAMFS): $(GUEST_BINS) guest/init scripts/build-initramfs.sh
	@$(STAGE) initramfs scripts/build-initramfs.sh $(LINUX_SRC) $@ $(GUEST_BINS)

# --- the fake AMD certificate chain (ARK, ASK, VCEK) the SEV-SNP responder signs with
certs: $(SNP_CERTS) ## make the fake AMD ARK/ASK/VCEK in build/snp (openssl)
$(SNP_CERTS): scripts/snp-certs.sh | $(STAMP)/deps
	@$(STAGE) certs scripts/snp-certs.sh $(@D)

# --- 7./8. tests: each suite writes build/results/<suite>.tap; the summary comes last
check: qemu kernel guest $(SNP_CERTS) $(UPSTREAM_VMLINUZ) ## run every test; ends with 'N passed, N failed'
	@rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	-@$(STAGE) check-qtest scripts/check-qtest.sh $(QEMU_SRC) $(QEMU_OBJ) $(RESULTS)/qtest.tap
	-@$(STAGE) check-guest scripts/guest-test.py --kunit --name check-guest \
		--tap $(RESULTS)/guest.tap $(subst $(eval) ,$(comma),$(GUEST_TESTS))
	-@$(STAGE) check-guest-leak-off scripts/guest-test.py --name check-guest-leak-off \
		--device virtio-rng-pci,id=rng0,leak=off --tap $(RESULTS)/guest-leak-off.tap epoch_abi
	-@$(STAGE) check-attest scripts/check-attest.py $(RESULTS)
	-@$(STAGE) check-differential scripts/tap-step.sh $(RESULTS)/differential.tap \
		"io_uring_sysctl: same results on our 6.1 and on Debian's $(UPSTREAM_KERNEL_PACKAGE)" \
		scripts/differential.sh io_uring_sysctl $(BZIMAGE) $(UPSTREAM_VMLINUZ) $(INITRAMFS)
	-@$(STAGE) check-scenarios snapshot-scenarios/run.py --tap $(RESULTS)/scenario.tap
	-@$(STAGE) check-spec scripts/tap-step.sh $(RESULTS)/spec.tap \
		"docs/spec: rng-leak.md and statements.tsv agree with rng-leak.tex" \
		scripts/spec-md.py --check docs/spec/statements.tsv docs/spec/rng-leak.tex docs/spec/rng-leak.md
	-@$(STAGE) check-conformance scripts/tap-step.sh $(RESULTS)/zz-conformance.tap \
		"conformance: every normative statement has a passing test ($(RESULTS)/conformance.md)" \
		scripts/conformance.py docs/spec/statements.tsv $(RESULTS) $(RESULTS)/conformance.md
	@scripts/summary.py $(RESULTS)

$(UPSTREAM_VMLINUZ): versions.mk scripts/fetch-kernel.sh | $(STAMP)/deps
	@$(STAGE) upstream-kernel scripts/fetch-kernel.sh $(UPSTREAM_KERNEL_PACKAGE) $@

scenarios: qemu guest ## run the snapshot scenarios: make scenarios [KERNEL=img] [ONLY=3,6]
	snapshot-scenarios/run.py $(if $(KERNEL),--kernel $(KERNEL)) $(if $(ONLY),--only $(ONLY))

comma := ,

guest-test: qemu guest $(SNP_CERTS) ## boot the guest and run one test: make guest-test T=smoke
	@test -n "$(T)" || { echo "usage: make guest-test T=NAME (one of: $(GUEST_TESTS) $(ATTEST_TESTS))"; exit 2; }
	scripts/guest-test.py --name guest-test-$(T) --kernel $(BZIMAGE) \
		$(if $(filter $(T),$(ATTEST_TESTS)),--snp) $(T)

demo: qemu guest $(SNP_CERTS) ## boot the guest and tell what happened, in plain words
	@$(STAGE) demo scripts/demo.sh

bench: qemu guest $(SNP_CERTS) ## run the benchmarks and print the figures
	@$(STAGE) bench scripts/bench.sh

clean: ## remove test results and guest run directories (keeps the builds)
	rm -rf $(RESULTS) $(BUILD)/run

distclean: ## remove build/ entirely (sources, builds, stamps)
	rm -rf $(BUILD)

// SPDX-License-Identifier: GPL-2.0
/*
 * scenario_vmclock_peer - the guest half of snapshot-scenarios/vmclock_peer.py: what
 * an unpatched Linux 7.x gives user space across clones through VMClock.
 *
 * Linux 7.x's ptp_vmclock maps the VMClock page read-only into user space
 * (/dev/vmclock0, one page, PROT_READ, MAP_SHARED).  Its layout is
 * include/uapi/linux/vmclock-abi.h: flag VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT (bit 8)
 * says that the hypervisor bumps the little-endian u64 vm_generation_counter at offset
 * 0x68 each time the VM is loaded from saved state.  This program uses its low 32 bits
 * as the guard of guest-tests/epoch_prng.h's generator (the counter moves by 1), where
 * scenario_agent uses the RNG epoch our kernel patches add; the kernel itself is
 * Debian's, unpatched.  The header reads the word after the guard as the offset of a
 * second counter, 0 for none: here that is the counter's high half, 0 until 2^32
 * restores.
 *
 * It publishes the same locked page as scenario_agent (struct agent_page) and its
 * guest-physical address, then works in one of these modes (scenario= on the kernel
 * command line):
 *
 *   scenario=epoch    spin while the counter is unchanged: while (*gen == G0)
 *                     ++page->spins;  when it moves, print the final count, the old and
 *                     new counter, 32 bytes each of getrandom(), of the counter-guarded
 *                     generator and of the vDSO's getrandom(); then spin again.
 *   scenario=pstream  the counter-guarded generator, 8 bytes per call, into the rings
 *   scenario=stream   getrandom(8) through the syscall, into the rings
 *   scenario=vstream  getrandom(8) through the vDSO (glibc 2.41's path), into the rings
 *
 * The rings are scenario_agent's: 'raw' keeps the first output of each index, 'guarded'
 * the output of the call that moved the index, which moves only when the counter did
 * not move across the call; on 'dump N K [ring]' from ttyS1 the agent prints outputs
 * N..N+K-1.  With scenario_cpu=N it runs on CPU N, the interrupts on the others.
 *
 * Commands come on ttyS1, output goes to the console; every line the host parses starts
 * with '# scenario:'.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sysinfo.h>
#include <termios.h>
#include <unistd.h>

#include "agent_common.h"
#include "cmdline.h"
#include "epoch_prng.h"
#include "vdso_getrandom.h"

/* The VMClock page layout (include/uapi/linux/vmclock-abi.h): agent_common.h */
static const volatile uint8_t *clk;	/* the VMClock page */
static const volatile uint32_t *gen;	/* low half of vm_generation_counter */
static struct vdso_getrandom vdso;
static int have_vdso;

static uint64_t clk64(unsigned int off)
{
	return *(const volatile uint64_t *)(clk + off);
}

static void print_event(struct epoch_prng *prng, uint64_t final, uint32_t old, uint32_t now)
{
	uint8_t kernel[32], user[32], fromvdso[32] = { 0 };
	char hk[65], hu[65], hv[65];

	if (epoch_prng_bytes(prng, user, sizeof(user)))
		die("reseed");
	if (getrandom(kernel, sizeof(kernel), 0) != sizeof(kernel))
		die("getrandom");
	if (have_vdso && vdso_getrandom(&vdso, fromvdso, sizeof(fromvdso)) != sizeof(fromvdso))
		die("vDSO getrandom");
	hex(hk, kernel, sizeof(kernel));
	hex(hu, user, sizeof(user));
	hex(hv, fromvdso, sizeof(fromvdso));
	page->events++;
	printf("# scenario: event n=%" PRIu64 " final_spins=%" PRIu64
	       " old_epoch=0x%08x new_epoch=0x%08x reseeds=%" PRIu64 " getrandom=%s prng=%s"
	       " vdso=%s\n", page->events, final, old, now, prng->reseeds, hk, hu, hv);
	fflush(stdout);
}

static void run_epoch(struct epoch_prng *prng)
{
	for (;;) {
		uint32_t g0 = *gen, now;
		uint64_t final;

		page->epoch = g0;
		page->spins = 0;
		printf("# scenario: spinning epoch=0x%08x\n", g0);
		fflush(stdout);
		while (*gen == g0)
			page->spins++;
		final = page->spins;
		now = *gen;
		print_event(prng, final, g0, now);
	}
}

/* The streams (agent_common.h's rings), made by this program's generators */
static enum { GEN_SYSCALL, GEN_VDSO, GEN_PRNG } stream_gen;
static struct epoch_prng *stream_prng;
static uint64_t stream_last = UINT64_MAX;

static void stream_step(void)
{
	uint64_t i = page->spins, out;
	uint32_t seen = *gen;
	ssize_t ret;

	switch (stream_gen) {
	case GEN_VDSO:
		ret = vdso_getrandom(&vdso, &out, sizeof(out));
		break;
	case GEN_PRNG:
		ret = epoch_prng_bytes(stream_prng, &out, sizeof(out)) ? -1 : (ssize_t)sizeof(out);
		break;
	default:
		ret = getrandom(&out, sizeof(out), 0);
	}
	if (ret != sizeof(out))
		die("generator");
	if (i != stream_last)
		ring[RING_RAW][i % RING_ENTRIES] = out;
	ring[RING_GUARDED][i % RING_ENTRIES] = out;
	stream_last = i;
	/* No branch between the check and the store: see scenario_agent's stream_step(). */
	page->spins = i + (*gen == seen);
}

static void run_stream(void)
{
	static const char *const what[] = { "getrandom", "vDSO getrandom",
					    "vmclock-guarded generator" };
	struct pollfd pfd = { .fd = fileno(command), .events = POLLIN };
	unsigned int calls = 0;
	char line[256];
	int r;

	for (r = 0; r < NR_RINGS; r++) {
		ring[r] = calloc(RING_ENTRIES, sizeof(*ring[r]));
		if (!ring[r] || mlock(ring[r], RING_ENTRIES * sizeof(*ring[r])))
			die("ring");
	}
	printf("# scenario: streaming %s\n", what[stream_gen]);
	fflush(stdout);
	for (;;) {
		stream_step();
		if (++calls % 256 || poll(&pfd, 1, 0) <= 0)
			continue;
		if (!fgets(line, sizeof(line), command))
			die("command input");
		stream_dump(line);
		fflush(stdout);
	}
}

/* Map /dev/vmclock0; NULL with why filled in when there is no usable counter. */
static const char *map_vmclock(char *why, size_t len)
{
	int fd = open("/dev/vmclock0", O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0) {
		snprintf(why, len, "no /dev/vmclock0 (%s): no ptp_vmclock, or no vmclock "
			 "device, or its page is smaller than 4096 bytes", strerror(errno));
		return NULL;
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(why, len, "mmap /dev/vmclock0: %s", strerror(errno));
		return NULL;
	}
	clk = p;
	if (*(const volatile uint32_t *)clk != VMCLOCK_MAGIC) {
		snprintf(why, len, "the VMClock page has magic 0x%08x",
			 *(const volatile uint32_t *)clk);
		return NULL;
	}
	if (!(clk64(VMCLOCK_OFF_FLAGS) & VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT)) {
		snprintf(why, len, "VMClock flags 0x%" PRIx64 " without VM_GEN_COUNTER_PRESENT "
			 "(a machine type before the series' 10.1, or vm-gen-counter=off)",
			 clk64(VMCLOCK_OFF_FLAGS));
		return NULL;
	}
	/* Little-endian: the low half of the u64 is at its offset. */
	gen = (const volatile uint32_t *)(clk + VMCLOCK_OFF_VM_GENERATION_COUNTER);
	return "present";
}

int main(void)
{
	struct epoch_prng prng;
	char mode[32] = "epoch", why[200] = "";
	const char *counter;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pin_to_cpu();
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || mlock(page, 4096))
		die("agent page");
	page->magic = AGENT_MAGIC;
	cmdline_value("scenario", mode, sizeof(mode));
	page->mode = mode[0];

	counter = map_vmclock(why, sizeof(why));
	have_vdso = !vdso_getrandom_init(&vdso);
	if (counter && epoch_prng_init(&prng, gen))
		die("seed");
	printf("# scenario: ready page_gpa=0x%" PRIx64 " mode=%s epoch=%s\n",
	       guest_physical(page), mode, counter ? "present" : "absent");
	print_in_play();
	if (counter)
		printf("# scenario: vmclock flags=0x%" PRIx64 " seq_count=%" PRIu64
		       " disruption_marker=%" PRIu64 " vm_generation_counter=%" PRIu64 "\n",
		       clk64(VMCLOCK_OFF_FLAGS),
		       (uint64_t)*(const volatile uint32_t *)(clk + VMCLOCK_OFF_SEQ_COUNT),
		       clk64(VMCLOCK_OFF_DISRUPTION_MARKER),
		       clk64(VMCLOCK_OFF_VM_GENERATION_COUNTER));
	/* Whether the kernel has vmgenid's driver (built in, in Debian's config). */
	printf("# scenario: vmgenid driver=%s\n",
	       !access("/sys/bus/platform/drivers/vmgenid", F_OK) ||
	       !access("/sys/bus/acpi/drivers/vmgenid", F_OK) ? "present" : "absent");
	fflush(stdout);

	command = open_command();
	if (!counter) {
		printf("# scenario: not applicable: %s\n", why);
		return 0;
	}
	if (!strcmp(mode, "epoch")) {
		run_epoch(&prng);
	} else if (!strcmp(mode, "stream") || !strcmp(mode, "vstream") ||
		   !strcmp(mode, "pstream")) {
		if (mode[0] == 'v' && !have_vdso) {
			printf("# scenario: not applicable: %s\n", vdso.why);
			return 0;
		}
		stream_gen = mode[0] == 'v' ? GEN_VDSO : mode[0] == 'p' ? GEN_PRNG : GEN_SYSCALL;
		stream_prng = &prng;
		run_stream();
	}
	printf("# scenario: error: unknown mode %s\n", mode);
	return 1;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * scenario_agent - the guest half of snapshot-scenarios/.
 *
 * It publishes a locked page (struct agent_page) and its guest-physical address, so
 * that the host can read the spin counter from guest memory while the VM is stopped,
 * then works in one of these modes, chosen on the kernel command line:
 *
 *   scenario=epoch   (default when the RNG epoch exists) spin while the epoch is
 *                    unchanged: while (*epoch == E0) ++page->spins;  When it moves, print
 *                    the final count, the old and new epoch, 32 bytes of getrandom() and
 *                    32 bytes of the epoch-guarded user-space generator; then spin again.
 *   scenario=line    (default without the epoch) wait for a line on ttyS1, then
 *                    print the same line with the unguarded generator: the negative
 *                    control, where nothing tells user space about the snapshot.
 *   scenario=stream  call getrandom(8) in a loop, keeping each output at index
 *                    page->spins of a ring; on 'dump N K' from ttyS1 print outputs
 *                    N..N+K-1, so that the host can find where two clones stop agreeing;
 *                    on 'event' print an event line with the unguarded generator.
 *                    The index moves only when the RNG epoch did not move across the
 *                    call (see stream_step()): a second ring keeps what that guarded
 *                    caller kept, 'dump N K guarded' prints it.
 *   scenario=vstream the same with the vDSO's getrandom() (6.11), the one glibc 2.41
 *                    calls; where the vDSO has none, say so ('not applicable') and exit.
 *   scenario=attest  on 'report TAG' from ttyS1, get an attestation report through
 *                    configfs-tsm with TAG as REPORT_DATA and print whether it worked,
 *                    with the RNG epoch of the moment: the sev-guest side of scenario 9.
 *
 * With scenario_cpu=N on the command line it runs on CPU N and leaves the interrupts to
 * the other CPUs (see pin_to_cpu()).
 *
 * The host types its commands on the second UART, ttyS1, which the agent only reads
 * (echo off); all output goes to the console, ttyS0.
 * Every line the host parses starts with '# scenario:'.
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sysinfo.h>
#include <termios.h>
#include <unistd.h>

#include "agent_common.h"
#include "cmdline.h"
#include "rng_uapi.h"
#include "epoch_prng.h"
#include "tsm_util.h"
#include "vdso_getrandom.h"

#ifndef RNDEPOCH
#define RNDEPOCH _IO('R', 0x08)
#endif

static const volatile uint32_t *epoch;

static void print_event(struct epoch_prng *prng, uint64_t final, uint32_t old, uint32_t now,
			uint64_t vm_old, uint64_t vm_now)
{
	uint8_t kernel[32], user[32];
	char hk[65], hu[65];

	if (getrandom(kernel, sizeof(kernel), 0) != sizeof(kernel))
		die("getrandom");
	if (epoch_prng_bytes(prng, user, sizeof(user)))
		die("reseed");
	hex(hk, kernel, sizeof(kernel));
	hex(hu, user, sizeof(user));
	page->events++;
	printf("# scenario: event n=%" PRIu64 " final_spins=%" PRIu64
	       " old_epoch=0x%08x new_epoch=0x%08x reseeds=%" PRIu64 " getrandom=%s prng=%s"
	       " vm_counter=%" PRIu64 "->%" PRIu64 "\n",
	       page->events, final, old, now, prng->reseeds, hk, hu, vm_old, vm_now);
	fflush(stdout);
}

static void run_epoch(struct epoch_prng *prng)
{
	for (;;) {
		uint32_t e0 = *epoch, now;
		const volatile uint64_t *vm_counter;
		uint64_t final, v0, vnow;

		/* The value moves when a VM counter comes or goes: look where it is now. */
		vm_counter = epoch_vm_counter(epoch);
		v0 = *vm_counter;
		page->epoch = e0;
		page->spins = 0;
		printf("# scenario: spinning epoch=0x%08x\n", e0);
		fflush(stdout);
		while (*epoch == e0 && *vm_counter == v0)
			page->spins++;
		final = page->spins;
		now = *epoch;
		vnow = *vm_counter;
		print_event(prng, final, e0, now, v0, vnow);
	}
}

static void run_line(struct epoch_prng *prng)
{
	char line[256];

	for (;;) {
		printf("# scenario: waiting for a line on ttyS1\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), command))
			die("console input");
		print_event(prng, 0, 0, 0, 0, 0);
	}
}

/*
 * The streams: what the n-th call of a generator returned, at index n of a ring, for the
 * host to compare between clones.  Two callers in one: the raw ring keeps the first
 * output of each index (a caller that keeps whatever the call returned), the guarded
 * ring the output of the call that moved the index (a caller that reads the epoch before
 * and after the call, seqlock style, and calls again when it moved).
 */
static struct vdso_getrandom vdso;
static int stream_vdso;
static uint64_t stream_last = UINT64_MAX;
static const uint32_t no_epoch;		/* the guard where the kernel has no epoch */

static void stream_step(void)
{
	const volatile uint32_t *guard = epoch ? epoch : &no_epoch;
	const volatile uint64_t *vm = epoch_vm_counter(epoch);
	uint64_t i = page->spins, out, vm_seen = *vm;
	uint32_t seen = *guard;
	ssize_t ret;

	ret = stream_vdso ? vdso_getrandom(&vdso, &out, sizeof(out)) :
			    getrandom(&out, sizeof(out), 0);
	if (ret != sizeof(out))
		die(stream_vdso ? "vDSO getrandom" : "getrandom");
	if (i != stream_last)
		ring[RING_RAW][i % RING_ENTRIES] = out;
	ring[RING_GUARDED][i % RING_ENTRIES] = out;
	stream_last = i;
	/*
	 * No branch between the load that checks the epoch and the store that moves the
	 * index: TCG stops a vCPU only between translation blocks, so a snapshot falls
	 * before both or after both, and an output whose call began before the snapshot
	 * never moves the index after it: the call is made again.  (KVM can stop a vCPU
	 * between any two instructions; there, the output the host finds in flight may
	 * have been checked before the snapshot.)
	 */
	page->spins = i + ((*guard == seen) & (*vm == vm_seen));
}

static void run_stream(struct epoch_prng *prng)
{
	struct pollfd pfd = { .fd = fileno(command), .events = POLLIN };
	unsigned int calls = 0;
	char line[256];
	int r;

	for (r = 0; r < NR_RINGS; r++) {
		ring[r] = calloc(RING_ENTRIES, sizeof(*ring[r]));
		if (!ring[r] || mlock(ring[r], RING_ENTRIES * sizeof(*ring[r])))
			die("ring");
	}
	printf("# scenario: streaming %s\n", stream_vdso ? "vDSO getrandom" : "getrandom");
	fflush(stdout);
	for (;;) {
		stream_step();
		/* A look at the command channel now and then: not a system call per output. */
		if (++calls % 256 || poll(&pfd, 1, 0) <= 0)
			continue;
		if (!fgets(line, sizeof(line), command))
			die("command input");
		if (!strncmp(line, "event", 5))
			print_event(prng, 0, 0, 0, 0, 0);
		else
			stream_dump(line);
		fflush(stdout);
	}
}

/* One report for the nonce TAG (zero-padded): 0 or an errno. */
static int attest_once(const char *tag)
{
	uint8_t nonce[TSM_INBLOB_MAX] = { 0 }, report[SNP_REPORT_SIZE];
	const char *stage;
	char item[64];

	snprintf((char *)nonce, sizeof(nonce), "%s", tag);
	snprintf(item, sizeof(item), "scenario-%s", tag);
	return tsm_report_once(item, nonce, report, &stage);
}

static void run_attest(void)
{
	char line[256], tag[32];

	for (;;) {
		int err;

		printf("# scenario: waiting for a line on ttyS1\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), command))
			die("command input");
		if (sscanf(line, "report %31s", tag) != 1)
			continue;
		err = attest_once(tag);
		printf("# scenario: attest tag=%s rc=%d (%s) epoch=0x%08x\n", tag, err,
		       err ? strerror(err) : "ok", epoch ? *epoch : 0);
		fflush(stdout);
	}
}

int main(void)
{
	struct epoch_prng prng;
	char mode[32] = "";
	int fd, efd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pin_to_cpu();
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || mlock(page, 4096))
		die("agent page");
	page->magic = AGENT_MAGIC;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/urandom");
	efd = ioctl(fd, RNDEPOCH);
	if (efd >= 0) {
		epoch = epoch_map(efd);
		if (!epoch)
			die("mmap epoch");
	} else if (errno != ENOTTY && errno != EINVAL) {
		die("ioctl RNDEPOCH");
	}

	if (!cmdline_value("scenario", mode, sizeof(mode)))
		strcpy(mode, epoch ? "epoch" : "line");
	if (!strcmp(mode, "epoch") && !epoch) {
		printf("# scenario: epoch ABI absent (RNDEPOCH: %s); falling back to line mode\n",
		       strerror(errno));
		strcpy(mode, "line");
	}
	/* The guarded generator only in epoch mode: elsewhere it is the unguarded control. */
	if (epoch_prng_init(&prng, !strcmp(mode, "epoch") ? epoch : NULL))
		die("seed");
	page->mode = mode[0];

	printf("# scenario: ready page_gpa=0x%" PRIx64 " mode=%s epoch=%s\n",
	       guest_physical(page), mode, epoch ? "present" : "absent");
	print_in_play();
	fflush(stdout);

	command = open_command();
	if (!strcmp(mode, "vstream")) {
		if (vdso_getrandom_init(&vdso)) {
			printf("# scenario: not applicable: %s\n", vdso.why);
			return 0;
		}
		stream_vdso = 1;
	}
	if (!strcmp(mode, "epoch"))
		run_epoch(&prng);
	else if (!strcmp(mode, "stream") || !strcmp(mode, "vstream"))
		run_stream(&prng);
	else if (!strcmp(mode, "attest"))
		run_attest();
	else
		run_line(&prng);
	return 0;
}

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

#include "cmdline.h"
#include "epoch_prng.h"
#include "vdso_getrandom.h"

#define AGENT_MAGIC	0x72657365656421ULL	/* "reseed!", as scenario_agent's */
#define RING_ENTRIES	(1u << 20)

/* Linux 7.x's include/uapi/linux/vmclock-abi.h, the parts used here */
#define VMCLOCK_MAGIC				0x4b4c4356	/* "VCLK" */
#define VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT	(1 << 8)
#define VMCLOCK_FLAG_NOTIFICATION_PRESENT	(1 << 9)
#define VMCLOCK_OFF_SEQ_COUNT			0x0c
#define VMCLOCK_OFF_DISRUPTION_MARKER		0x10
#define VMCLOCK_OFF_FLAGS			0x18
#define VMCLOCK_OFF_VM_GENERATION_COUNTER	0x68

struct agent_page {
	uint64_t magic;
	volatile uint64_t spins;
	volatile uint32_t epoch;	/* the counter value the loop waits on */
	uint32_t mode;
	volatile uint64_t events;
};

static struct agent_page *page;
static FILE *command;
static const volatile uint8_t *clk;	/* the VMClock page */
static const volatile uint32_t *gen;	/* low half of vm_generation_counter */
static struct vdso_getrandom vdso;
static int have_vdso;

static void die(const char *what)
{
	printf("# scenario: error: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

static uint64_t clk64(unsigned int off)
{
	return *(const volatile uint64_t *)(clk + off);
}

static uint64_t guest_physical(const void *addr)
{
	uint64_t entry;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		die("open /proc/self/pagemap");
	if (pread(fd, &entry, sizeof(entry), ((uintptr_t)addr / 4096) * sizeof(entry)) !=
	    sizeof(entry))
		die("read /proc/self/pagemap");
	close(fd);
	if (!(entry & (1ULL << 63)) || !(entry & ((1ULL << 55) - 1))) {
		errno = EFAULT;
		die("agent page not present (pagemap PFN hidden?)");
	}
	return (entry & ((1ULL << 55) - 1)) * 4096;
}

/* scenario_cpu=N: run on CPU N, every interrupt that can move on the others (as
 * scenario_agent does, and for the same reason: see its pin_to_cpu()). */
static void pin_to_cpu(void)
{
	char value[16], path[300], mask[16];
	int cpu, moved = 0, fd;
	struct dirent *irq;
	cpu_set_t set;
	DIR *dir;

	if (!cmdline_value("scenario_cpu", value, sizeof(value)))
		return;
	cpu = atoi(value);
	if (cpu < 1 || cpu >= get_nprocs() || cpu >= 32) {
		errno = EINVAL;
		die("scenario_cpu: needs a CPU other than 0 and at least two CPUs");
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
	snprintf(mask, sizeof(mask), "%x", ((1u << get_nprocs()) - 1) & ~(1u << cpu));
	dir = opendir("/proc/irq");
	if (!dir)
		die("/proc/irq");
	while ((irq = readdir(dir))) {
		if (irq->d_name[0] < '0' || irq->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/irq/%s/smp_affinity", irq->d_name);
		fd = open(path, O_WRONLY);
		if (fd >= 0 && write(fd, mask, strlen(mask)) == (ssize_t)strlen(mask))
			moved++;
		if (fd >= 0)
			close(fd);
	}
	closedir(dir);
	printf("# scenario: on cpu %d, %d interrupts moved to cpu mask %s\n", cpu, moved, mask);
}

static FILE *open_command(void)
{
	struct termios t;
	int fd = open("/dev/ttyS1", O_RDWR | O_NOCTTY | O_CLOEXEC);
	FILE *f;

	if (fd < 0)
		die("open /dev/ttyS1 (the host's command channel)");
	if (tcgetattr(fd, &t) == 0) {
		t.c_lflag &= ~(ECHO | ECHONL | ECHOE | ECHOK | ISIG | IEXTEN);
		t.c_lflag |= ICANON;
		t.c_iflag |= ICRNL;
		t.c_oflag &= ~OPOST;
		tcsetattr(fd, TCSANOW, &t);
	}
	f = fdopen(fd, "r");
	if (!f)
		die("fdopen ttyS1");
	return f;
}

static void hex(char *dst, const uint8_t *src, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(dst + 2 * i, "%02x", src[i]);
}

/*
 * The event line, in scenario_agent's format (the host's parser is run.py's), and the
 * vDSO's output after it.  The generator first: it is what the first instruction after
 * the counter moved would use.
 */
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

/* The streams, as scenario_agent's stream_step() and stream_dump() */
enum { RING_RAW, RING_GUARDED, NR_RINGS };
static const char *const ring_name[NR_RINGS] = { "raw", "guarded" };
static uint64_t *ring[NR_RINGS];
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

static void stream_dump(const char *line)
{
	char name[16] = "raw";
	uint64_t n, k, i;
	int r;

	if (sscanf(line, "dump %" SCNu64 " %" SCNu64 " %15s", &n, &k, name) < 2)
		return;
	for (r = 0; r < NR_RINGS && strcmp(name, ring_name[r]); r++)
		;
	if (r == NR_RINGS || k > RING_ENTRIES / 2) {
		printf("# scenario: dump refused: ring '%s', %" PRIu64 " outputs\n", name, k);
		return;
	}
	while (page->spins < n + k)
		stream_step();
	if (page->spins > n + RING_ENTRIES) {
		printf("# scenario: dump overrun: output %" PRIu64 " was overwritten (index now %"
		       PRIu64 ")\n", n, page->spins);
		return;
	}
	for (i = 0; i < k; i++) {
		if (i % 16 == 0)
			printf("# scenario: dump %s", name);
		printf(" %08" PRIx32, (uint32_t)ring[r][(n + i) % RING_ENTRIES]);
		if (i % 16 == 15 || i + 1 == k)
			putchar('\n');
	}
	printf("# scenario: dump end\n");
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

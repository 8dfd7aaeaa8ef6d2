/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent_common.h - what the guest agents of snapshot-scenarios/ share: scenario_agent
 * (ours) and scenario_vmclock_peer (the Linux 7 peer).
 *
 * The agent page that the host reads from guest memory while the VM is stopped, the
 * command channel (ttyS1), the CPU pinning, and the output rings with the 'dump'
 * command that the host's read_stream() (snapshot-scenarios/scenario_lib.py) parses.  A program
 * that includes it defines stream_step(), which makes the next output at index
 * page->spins of the rings (unless it defines AGENT_NO_STREAM).
 */
#ifndef AGENT_COMMON_H
#define AGENT_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <termios.h>
#include <unistd.h>

#include "cmdline.h"

#define AGENT_MAGIC	0x72657365656421ULL	/* "reseed!" */
#define RING_ENTRIES	(1u << 20)

struct agent_page {
	uint64_t magic;
	volatile uint64_t spins;
	volatile uint32_t epoch;	/* the epoch value the loop waits on */
	uint32_t mode;
	volatile uint64_t events;
};

static struct agent_page *page;
static FILE *command;
static void die(const char *what)
{
	printf("# scenario: error: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
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

/*
 * scenario_cpu=N: run on CPU N, and move every interrupt that can move to the other CPUs,
 * as an application and a device's interrupts are apart in a VM with several vCPUs.  On
 * one vCPU under TCG, an interrupt pending when the VM resumes always runs before the
 * agent's next instruction, and what its handler does in the kernel (drawing random
 * bytes, which reseeds the crng when the epoch moved) hides a window that exists on
 * more vCPUs: there the agent runs on while another CPU takes the interrupt.
 */
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
		/* Per-CPU interrupts (the local timer) refuse: they stay where they are. */
		if (fd >= 0 && write(fd, mask, strlen(mask)) == (ssize_t)strlen(mask))
			moved++;
		if (fd >= 0)
			close(fd);
	}
	closedir(dir);
	printf("# scenario: on cpu %d, %d interrupts moved to cpu mask %s\n", cpu, moved, mask);
}

/* The host's command channel: ttyS1, line by line, without echo. */
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

#ifndef AGENT_NO_STREAM		/* the user-space suite's agent has rings of its own */
enum { RING_RAW, RING_GUARDED, NR_RINGS };
static const char *const ring_name[NR_RINGS] = { "raw", "guarded" };
static uint64_t *ring[NR_RINGS];
static void stream_step(void);

/* 'dump N K [ring]': outputs N..N+K-1, generated first if the stream is not there yet. */
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
#endif /* AGENT_NO_STREAM */

/*
 * What the guest really has in play for each mechanism, from sysfs and /dev/vmclock0:
 * a device QEMU offers is not a mechanism until a driver binds it (a distribution kernel
 * builds these drivers as modules) and, for the leak queues, the feature is negotiated.
 * One line for the host (snapshot-scenarios/run.py, scripts/audit.py label their figures
 * by it):
 *   # scenario: in-play virtio_rng=bound|unbound|absent leak=yes|no
 *     vmgenid=bound|unbound|absent vmclock=counter|no-counter|unbound|absent
 */
#define VMCLOCK_MAGIC				0x4b4c4356	/* "VCLK" */
#define VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT	(1 << 8)
#define VMCLOCK_FLAG_NOTIFICATION_PRESENT	(1 << 9)
#define VMCLOCK_OFF_SEQ_COUNT			0x0c
#define VMCLOCK_OFF_DISRUPTION_MARKER		0x10
#define VMCLOCK_OFF_FLAGS			0x18
#define VMCLOCK_OFF_VM_GENERATION_COUNTER	0x68

/* Whether a driver directory in sysfs lists a bound device (a symlink to it). */
static int driver_has_device(const char *dir)
{
	struct dirent *d;
	int found = 0;
	DIR *dp = opendir(dir);

	if (!dp)
		return -1;
	while (!found && (d = readdir(dp)))
		found = d->d_type == DT_LNK && strcmp(d->d_name, "module");
	closedir(dp);
	return found;
}

/* A sysfs file's first line, or "" */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
}

static void print_in_play(void)
{
	const char *rng = "absent", *leak = "no", *genid = "absent", *clock = "absent";
	char path[300], buf[128];
	struct dirent *d;
	DIR *dp;
	int fd;

	dp = opendir("/sys/bus/virtio/devices");
	while (dp && (d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/device", d->d_name);
		read_line(path, buf, sizeof(buf));
		if (strtoul(buf, NULL, 16) != 4)	/* VIRTIO_ID_RNG */
			continue;
		snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/driver", d->d_name);
		rng = access(path, F_OK) ? "unbound" : "bound";
		snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/features", d->d_name);
		read_line(path, buf, sizeof(buf));
		/* bit 0, VIRTIO_RNG_F_LEAK: what the driver accepted of what was offered */
		if (!strcmp(rng, "bound") && buf[0] == '1')
			leak = "yes";
	}
	if (dp)
		closedir(dp);
	/* The vmgenid device is ACPI "QEMUVGID"; its driver an ACPI or platform driver. */
	if (driver_has_device("/sys/bus/acpi/drivers/vmgenid") > 0 ||
	    driver_has_device("/sys/bus/platform/drivers/vmgenid") > 0)
		genid = "bound";
	else if (!access("/sys/bus/acpi/devices/QEMUVGID:00", F_OK))
		genid = "unbound";
	fd = open("/dev/vmclock0", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

		clock = "no-counter";
		if (p != MAP_FAILED) {
			if (*(volatile uint32_t *)p == VMCLOCK_MAGIC &&
			    *(volatile uint64_t *)((char *)p + VMCLOCK_OFF_FLAGS) &
			    VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT)
				clock = "counter";
			munmap(p, 4096);
		}
		close(fd);
	} else if (!access("/sys/bus/acpi/devices/AMZNC10C:00", F_OK) ||
		   !access("/sys/bus/acpi/devices/VMCLOCK:00", F_OK)) {
		clock = "unbound";
	}
	printf("# scenario: in-play virtio_rng=%s leak=%s vmgenid=%s vmclock=%s\n",
	       rng, leak, genid, clock);
}

#endif /* AGENT_COMMON_H */

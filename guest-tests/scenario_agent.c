// SPDX-License-Identifier: GPL-2.0
/*
 * scenario_agent - the guest half of snapshot-scenarios/.
 *
 * It publishes a locked page (struct agent_page) and its guest-physical address, so
 * that the host can read the spin counter from guest memory while the VM is stopped,
 * then works in one of three modes, chosen on the kernel command line:
 *
 *   scenario=epoch   (default when the RNG epoch exists) spin while the epoch is
 *                    unchanged: while (*epoch == E0) ++page->spins;  When it moves, print
 *                    the final count, the old and new epoch, 32 bytes of getrandom() and
 *                    32 bytes of the epoch-guarded user-space generator; then spin again.
 *   scenario=line    (default without the epoch) wait for a line on ttyS1, then
 *                    print the same line with the unguarded generator: the negative
 *                    control, where nothing tells user space about the snapshot.
 *   scenario=stream  call getrandom(8) in a loop, keeping each output at index
 *                    page->spins of a ring; on 'dump N K' from the console print outputs
 *                    N..N+K-1, so that the host can find where two clones stop agreeing;
 *                    on 'event' print an event line with the unguarded generator.
 *   scenario=attest  on 'report TAG' from ttyS1, get an attestation report through
 *                    configfs-tsm with TAG as REPORT_DATA and print whether it worked,
 *                    with the RNG epoch of the moment: the sev-guest side of scenario 9.
 *
 * The host types its commands on the second UART, ttyS1, which the agent only reads
 * (echo off); all output goes to the console, ttyS0.
 * Every line the host parses starts with '# scenario:'.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <termios.h>
#include <unistd.h>

#include "cmdline.h"
#include "rng_uapi.h"
#include "epoch_prng.h"
#include "tsm_util.h"

#ifndef RNDEPOCH
#define RNDEPOCH _IO('R', 0x08)
#endif

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
static const volatile uint32_t *epoch;

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

static void print_event(struct epoch_prng *prng, uint64_t final, uint32_t old, uint32_t now)
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
	       " old_epoch=0x%08x new_epoch=0x%08x reseeds=%" PRIu64 " getrandom=%s prng=%s\n",
	       page->events, final, old, now, prng->reseeds, hk, hu);
	fflush(stdout);
}

static void run_epoch(struct epoch_prng *prng)
{
	for (;;) {
		uint32_t e0 = *epoch, now;
		uint64_t final;

		page->epoch = e0;
		page->spins = 0;
		printf("# scenario: spinning epoch=0x%08x\n", e0);
		fflush(stdout);
		while (*epoch == e0)
			page->spins++;
		final = page->spins;
		now = *epoch;
		print_event(prng, final, e0, now);
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
		print_event(prng, 0, 0, 0);
	}
}

static void run_stream(struct epoch_prng *prng)
{
	uint64_t *ring = calloc(RING_ENTRIES, sizeof(*ring));
	struct pollfd pfd = { .fd = fileno(command), .events = POLLIN };
	char line[256];

	if (!ring || mlock(ring, RING_ENTRIES * sizeof(*ring)))
		die("ring");
	printf("# scenario: streaming getrandom\n");
	fflush(stdout);
	for (;;) {
		uint64_t n, k, i;

		if (getrandom(&ring[page->spins % RING_ENTRIES], sizeof(*ring), 0) != sizeof(*ring))
			die("getrandom");
		page->spins++;
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		if (!fgets(line, sizeof(line), command))
			die("command input");
		if (!strncmp(line, "event", 5)) {
			print_event(prng, 0, 0, 0);
			continue;
		}
		if (sscanf(line, "dump %" SCNu64 " %" SCNu64, &n, &k) != 2)
			continue;
		if (k > RING_ENTRIES / 2)
			k = RING_ENTRIES / 2;
		while (page->spins < n + k) {
			if (getrandom(&ring[page->spins % RING_ENTRIES], 8, 0) != 8)
				die("getrandom");
			page->spins++;
		}
		for (i = 0; i < k; i++) {
			printf("%s%08" PRIx32, i % 16 ? " " : "# scenario: dump ",
			       (uint32_t)ring[(n + i) % RING_ENTRIES]);
			if (i % 16 == 15 || i + 1 == k)
				putchar('\n');
		}
		printf("# scenario: dump end\n");
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
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || mlock(page, 4096))
		die("agent page");
	page->magic = AGENT_MAGIC;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/urandom");
	efd = ioctl(fd, RNDEPOCH);
	if (efd >= 0) {
		epoch = mmap(NULL, 4096, PROT_READ, MAP_SHARED, efd, 0);
		if (epoch == MAP_FAILED)
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
	fflush(stdout);

	command = open_command();
	if (!strcmp(mode, "epoch"))
		run_epoch(&prng);
	else if (!strcmp(mode, "stream"))
		run_stream(&prng);
	else if (!strcmp(mode, "attest"))
		run_attest();
	else
		run_line(&prng);
	return 0;
}

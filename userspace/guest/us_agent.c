// SPDX-License-Identifier: GPL-2.0
/*
 * us_agent.c - the agent of the user-space clone suite in a real Debian guest
 * (snapshot-scenarios/userspace.py, docs/userspace.md), started by systemd
 * (reseed-us.service).
 *
 * Usage: us_agent CONSUMERS-FILE
 *   Each line of CONSUMERS-FILE: NAME SLOTS PROGRAM [ARG...].  The agent creates the
 *   ring file (us_ring.h), locks it in memory, starts every program with its first slot
 *   in RESEED_US_SLOT (SLOTS 0: a helper such as the TLS server, no slot), waits until
 *   each slot has an output, and prints on the console
 *     # scenario: in-play ...                  (what the guest has, agent_common.h)
 *     # userspace: ready gpa=0x... slots=N     (the ring's first page, for the host)
 *   Commands on ttyS1, one per line:
 *     dump     stop every program, write the ring (the header page and the used slots'
 *              entries) to the disk whose serial is 'reseed-dump', print
 *              '# userspace: dumped BYTES'
 *     in-play  print the in-play line again
 *     state    print, per program, its slots' counts (SLOT=COUNT) and where it is: its
 *              state, wait channel and kernel stack (/proc/PID), then
 *              '# userspace: state done'
 *              (for a program that has not drawn when it should have)
 *     run PROGRAM [ARG...]
 *              stop every program, run a test program of the image to its end (its
 *              output on the console), print '# userspace: ran PROGRAM status N' (N: its
 *              exit status, or 128 + the signal that ended it), continue the programs
 */
#define AGENT_NO_STREAM
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "agent_common.h"
#include "us_ring.h"

#define MAX_PROGRAMS	24
#define DUMP_DISK	"reseed-dump"

struct program {
	pid_t pid;
	char name[32];
	int slot, slots;
};

static struct program prog[MAX_PROGRAMS];
static int nprog;
static struct us_header *h;

/* The words of line (blank-separated, at most max - 1 of them) into argv, NULL-ended. */
static int split(char *line, char **argv, int max)
{
	int argc = 0;
	char *tok;

	for (tok = strtok(line, " \t\r\n"); tok && argc < max - 1; tok = strtok(NULL, " \t\r\n"))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return argc;
}

static void start(struct program *p, char **argv)
{
	char slot[16];

	p->pid = fork();
	if (p->pid < 0)
		die("fork");
	if (p->pid == 0) {
		snprintf(slot, sizeof(slot), "%d", p->slot);
		setenv("RESEED_US_RING", US_RING_PATH, 1);
		setenv("RESEED_US_SLOT", slot, 1);
		execv(argv[0], argv);
		printf("# userspace: error: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
}

static void read_config(const char *path)
{
	char line[1024], *argv[32];
	FILE *f = fopen(path, "r");
	int argc;

	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f)) {
		struct program *p = &prog[nprog];

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (nprog == MAX_PROGRAMS) {
			errno = E2BIG;
			die("too many programs");
		}
		argc = split(line, argv, 32);
		if (argc < 3 || atoi(argv[1]) < 0 || h->used + atoi(argv[1]) > US_SLOTS) {
			errno = EINVAL;
			die("consumers file: NAME SLOTS PROGRAM [ARG...], slots within US_SLOTS");
		}
		snprintf(p->name, sizeof(p->name), "%s", argv[0]);
		p->slot = h->used;
		p->slots = atoi(argv[1]);
		/* published before the program starts: us_open() checks its slot against it */
		h->used += p->slots;
		start(p, argv + 2);
		nprog++;
	}
	fclose(f);
}

/* A program that ended is a broken measurement: say which and how. */
static void reap(void)
{
	int status, i;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (i = 0; i < nprog; i++)
			if (prog[i].pid == pid)
				printf("# userspace: error: %s ended (%s %d)\n", prog[i].name,
				       WIFEXITED(status) ? "exit" : "signal",
				       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	fflush(stdout);
}

static void wait_first_outputs(int seconds)
{
	time_t end = time(NULL) + seconds;
	int i, k, missing;

	do {
		reap();
		missing = 0;
		for (i = 0; i < nprog; i++)
			for (k = prog[i].slot; k < prog[i].slot + prog[i].slots; k++)
				missing += !__atomic_load_n(&h->slot[k].count, __ATOMIC_ACQUIRE);
		if (missing)
			usleep(100000);
	} while (missing && time(NULL) < end);
	for (i = 0; i < nprog; i++)
		for (k = prog[i].slot; k < prog[i].slot + prog[i].slots; k++)
			if (!h->slot[k].count)
				printf("# userspace: error: %s: no output in slot %d after %d s\n",
				       prog[i].name, k, seconds);
}

/* The block device whose virtio serial is DUMP_DISK. */
static int open_dump_disk(void)
{
	char path[64], serial[64];
	struct dirent *d;
	int fd = -1;
	DIR *dp = opendir("/sys/block");

	while (dp && fd < 0 && (d = readdir(dp))) {
		snprintf(path, sizeof(path), "/sys/block/%.20s/serial", d->d_name);
		read_line(path, serial, sizeof(serial));
		serial[strcspn(serial, "\n")] = '\0';
		if (strcmp(serial, DUMP_DISK))
			continue;
		snprintf(path, sizeof(path), "/dev/%.20s", d->d_name);
		fd = open(path, O_WRONLY | O_CLOEXEC);
	}
	if (dp)
		closedir(dp);
	return fd;
}

static int stopped;

/*
 * Stopped, and known to be: no entry changes while the rings are copied.  Once: a
 * stopped child's state change is reported to waitpid() only once.
 */
static void stop_programs(void)
{
	int i, status;

	for (i = 0; i < nprog && !stopped; i++)
		if (!kill(prog[i].pid, SIGSTOP))
			waitpid(prog[i].pid, &status, WUNTRACED);
	stopped = 1;
}

static void continue_programs(void)
{
	for (int i = 0; i < nprog; i++)
		kill(prog[i].pid, SIGCONT);
	stopped = 0;
}

static void dump(void)
{
	uint64_t len = US_ENTRIES_OFF + (uint64_t)h->used * US_CAPACITY * US_WIDTH, done = 0;
	int fd;
	ssize_t n;

	stop_programs();
	fd = open_dump_disk();
	if (fd < 0) {
		printf("# userspace: dump refused: no disk with serial %s\n", DUMP_DISK);
		return;
	}
	while (done < len) {
		n = write(fd, (char *)h + done, len - done);
		if (n <= 0)
			break;
		done += n;
	}
	if (done < len || fsync(fd))
		printf("# userspace: dump refused: wrote %" PRIu64 " of %" PRIu64 " bytes: %s\n",
		       done, len, strerror(errno));
	else
		printf("# userspace: dumped %" PRIu64 "\n", len);
	close(fd);
}

/* /proc/PID/stack's frames on one line: "a < b < c" (innermost first) */
static void kernel_stack(pid_t pid, char *buf, size_t len)
{
	char path[64], frame[128];
	size_t used = 0;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	f = fopen(path, "r");
	while (f && used + 4 < len && fgets(frame, sizeof(frame), f)) {
		char *sym = strchr(frame, ' ');

		sym = sym ? sym + 1 : frame;
		sym[strcspn(sym, "+\n")] = '\0';
		used += snprintf(buf + used, len - used, "%s%s", used ? " < " : "", sym);
	}
	if (f)
		fclose(f);
}

static void state(void)
{
	char path[64], stat[256], wchan[64], stack[384], *st;
	int i, k;

	for (i = 0; i < nprog; i++) {
		if (!prog[i].slots)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)prog[i].pid);
		read_line(path, stat, sizeof(stat));
		st = strrchr(stat, ')');
		snprintf(path, sizeof(path), "/proc/%d/wchan", (int)prog[i].pid);
		read_line(path, wchan, sizeof(wchan));
		kernel_stack(prog[i].pid, stack, sizeof(stack));
		printf("# userspace: state %s pid=%d", prog[i].name, (int)prog[i].pid);
		for (k = prog[i].slot; k < prog[i].slot + prog[i].slots; k++)
			printf(" %.24s=%" PRIu64, h->slot[k].name,
			       (uint64_t)__atomic_load_n(&h->slot[k].count, __ATOMIC_ACQUIRE));
		printf(" state=%c wchan=%s stack=%s\n", st && st[1] ? st[2] : '?',
		       wchan[0] ? wchan : "-", stack[0] ? stack : "-");
	}
	printf("# userspace: state done\n");
}

static void run(char *line)
{
	char *argv[32];
	int status;
	pid_t pid;

	if (!split(line + 4, argv, 32))
		return;
	/* A quiet guest for the test's timing (its benchmark) */
	stop_programs();
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		printf("# userspace: error: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = 255 << 8;
	printf("# userspace: ran %s status %d\n", argv[0],
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	continue_programs();
}

int main(int argc, char **argv)
{
	char line[256];
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s CONSUMERS-FILE\n", argv[0]);
		return 2;
	}
	fd = open(US_RING_PATH, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, US_RING_SIZE))
		die(US_RING_PATH);
	h = mmap(NULL, US_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		die("mmap the ring");
	close(fd);
	/* Resident and where the host was told, from now on. */
	if (mlock(h, US_RING_SIZE))
		die("mlock the ring");
	h->magic = US_MAGIC;
	h->slots = US_SLOTS;
	h->capacity = US_CAPACITY;
	h->width = US_WIDTH;

	read_config(argv[1]);
	wait_first_outputs(120);
	/* Open before 'ready': what the host types into a UART nobody has open is lost. */
	command = open_command();
	print_in_play();
	printf("# userspace: ready gpa=0x%" PRIx64 " slots=%u\n", guest_physical(h), h->used);

	while (fgets(line, sizeof(line), command)) {
		reap();
		if (!strncmp(line, "dump", 4))
			dump();
		else if (!strncmp(line, "in-play", 7))
			print_in_play();
		else if (!strncmp(line, "state", 5))
			state();
		else if (!strncmp(line, "run ", 4))
			run(line);
	}
	die("ttyS1 closed");
}

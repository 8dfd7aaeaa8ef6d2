// SPDX-License-Identifier: GPL-2.0
/*
 * reseed-notify - run hooks when the RNG epoch moves (a VM snapshot was taken or
 * restored, or a clone started), for what no generator fix reaches: TLS session-ticket
 * keys, VPN session keys, cached identifiers.
 *
 * Usage: reseed-notify [--hooks DIR] [--once]
 *   Waits in poll() on the descriptor of ioctl(RNDEPOCH) on /dev/urandom (readable
 *   once the epoch moved since it last read it), reads the epoch, logs the move and
 *   runs the executable files of DIR (default /etc/reseed-notify.d) one after the
 *   other in name order, as run-parts does (names of letters, digits, '_' and '-'
 *   only), each with RESEED_EPOCH set to the new epoch (hex) and its output in the log;
 *   then waits again.  --once: return after the first move.  Where the kernel has no
 *   RNG epoch yet (no device that moves it has registered), it says so and asks again
 *   every 30 s.  Logs to stdout (the journal under systemd), one line per event.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RNDEPOCH
#define RNDEPOCH _IO('R', 0x08)		/* <linux/random.h> of the RNG epoch series */
#endif

static const char *hooks = "/etc/reseed-notify.d";

static int epoch_fd(void)
{
	static int said;
	int fd, efd, err;

	for (;;) {
		fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			printf("reseed-notify: /dev/urandom: %s\n", strerror(errno));
			return -1;
		}
		efd = ioctl(fd, RNDEPOCH);
		err = errno;
		close(fd);
		if (efd >= 0)
			return efd;
		if (!said++)
			printf("reseed-notify: no RNG epoch yet (RNDEPOCH: %s): asking again "
			       "every 30 s\n", strerror(err));
		sleep(30);
	}
}

static int hook_name(const struct dirent *d)
{
	const char *c;

	if (d->d_name[0] == '.' || d->d_name[0] == '\0')
		return 0;
	for (c = d->d_name; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') &&
		    !(*c >= '0' && *c <= '9') && *c != '_' && *c != '-')
			return 0;
	return 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run_hooks(uint64_t epoch)
{
	struct dirent **names;
	char path[4096], value[32];
	int n, i, status;
	struct stat st;
	double t0;
	pid_t pid;

	n = scandir(hooks, &names, hook_name, alphasort);
	if (n < 0) {
		printf("reseed-notify: %s: %s\n", hooks, strerror(errno));
		return;
	}
	snprintf(value, sizeof(value), "0x%016" PRIx64, epoch);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", hooks, names[i]->d_name);
		free(names[i]);
		if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, X_OK))
			continue;
		t0 = now();
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			setenv("RESEED_EPOCH", value, 1);
			execl(path, path, (char *)NULL);
			printf("reseed-notify: %s: %s\n", path, strerror(errno));
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid) {
			printf("reseed-notify: %s: not run: %s\n", path, strerror(errno));
			continue;
		}
		printf("reseed-notify: %s: %s %d after %.3f s\n", path,
		       WIFEXITED(status) ? "exit" : "signal",
		       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), now() - t0);
	}
	free(names);
}

int main(int argc, char **argv)
{
	struct pollfd pfd = { .events = POLLIN };
	int once = 0, i;
	uint64_t epoch;
	double t;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--once")) {
			once = 1;
		} else if (!strcmp(argv[i], "--hooks") && i + 1 < argc) {
			hooks = argv[++i];
		} else {
			int help = !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");

			fprintf(help ? stdout : stderr, "usage: %s [--hooks DIR] [--once]\n",
				argv[0]);
			return help ? 0 : 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pfd.fd = epoch_fd();
	if (pfd.fd < 0)
		return 1;
	printf("reseed-notify: waiting for the RNG epoch to move; hooks in %s\n", hooks);
	for (;;) {
		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			printf("reseed-notify: poll: %s\n", strerror(errno));
			return 1;
		}
		t = now();
		if (read(pfd.fd, &epoch, sizeof(epoch)) != sizeof(epoch)) {
			/* a kernel whose descriptor cannot be polled reports it readable */
			printf("reseed-notify: read of the epoch: %s (a kernel without poll() on "
			       "RNDEPOCH?)\n", strerror(errno));
			return 1;
		}
		printf("reseed-notify: the RNG epoch moved to 0x%016" PRIx64 "\n", epoch);
		run_hooks(epoch);
		printf("reseed-notify: hooks done in %.3f s\n", now() - t);
		if (once)
			return 0;
	}
}

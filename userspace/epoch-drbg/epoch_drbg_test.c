// SPDX-License-Identifier: Apache-2.0
/*
 * epoch_drbg_test.c - unit tests of the EPOCH-DRBG provider (epoch_drbg.c), TAP output.
 *
 * Usage: epoch_drbg_test [--bench]
 *   Runs with the provider selected by the OpenSSL configuration (OPENSSL_CONF, or the
 *   system's once reseed-epoch-drbg is installed).  Where the kernel has no RNG epoch
 *   (RNDEPOCH fails; the host's kernel), it checks the fallback: EPOCH-DRBG is the DRBG,
 *   works, and said so once.  Where it has one (the guests), it asks for the epoch to
 *   move ('# epoch-drbg: move the epoch', which the host answers with QMP entropy-leak)
 *   and checks that every DRBG reseeded before its next output, and only then:
 *     - the public and private DRBGs of the main thread, after the move, not before it
 *     - a thread's own DRBGs, which drew before the move, reseed at their next call
 *     - a forked child, after a second move, reseeds (and draws other bytes than the
 *       parent after the same move)
 *     - a thread started after a third move: its new DRBG, seeded from a primary that
 *       had not reseeded since, reseeds with the primary before its first output
 *   --bench: RAND_bytes of 16 and 4096 bytes with the configured DRBG and with OpenSSL's
 *   default (CTR-DRBG), each in a library context of its own, side by side, as a ratio.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/conf.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#ifndef RNDEPOCH
#define RNDEPOCH _IO('R', 0x08)
#endif

static int tests;
static int failed;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	failed += !cond;
}

static const char *drbg_name(EVP_RAND_CTX *ctx)
{
	return ctx ? EVP_RAND_get0_name(EVP_RAND_CTX_get0_rand(ctx)) : "(none)";
}

/* The reseed count of a DRBG (the wrapped CTR-DRBG's, which EPOCH-DRBG reports). */
static unsigned int reseeds(EVP_RAND_CTX *ctx)
{
	unsigned int n = 0;
	OSSL_PARAM p[] = {
		OSSL_PARAM_uint(OSSL_DRBG_PARAM_RESEED_COUNTER, &n),
		OSSL_PARAM_END
	};

	if (!EVP_RAND_CTX_get_params(ctx, p))
		return ~0u;
	return n;
}

static const volatile uint32_t *epoch;

static int map_epoch(void)
{
	int fd = open("/dev/random", O_RDONLY | O_CLOEXEC), efd;
	void *p;

	if (fd < 0)
		return -1;
	efd = ioctl(fd, RNDEPOCH);
	close(fd);
	if (efd < 0)
		return -1;
	p = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, efd, 0);
	close(efd);
	if (p == MAP_FAILED)
		return -1;
	epoch = p;
	return 0;
}

/* Ask the host to move the epoch, and wait until it did (at most 60 s). */
static int move_epoch(void)
{
	uint32_t before = *epoch;
	int i;

	printf("# epoch-drbg: move the epoch (now 0x%08x)\n", before);
	fflush(stdout);
	for (i = 0; i < 6000 && *epoch == before; i++)
		usleep(10000);
	printf("# epoch-drbg: epoch 0x%08x\n", *epoch);
	return *epoch != before;
}

struct thread_arg {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int phase;			/* 0 drawing, 1 drew, 2 epoch moved, 3 done */
	unsigned int before, after;
	int drew;
};

static void wait_phase(struct thread_arg *t, int phase)
{
	pthread_mutex_lock(&t->lock);
	while (t->phase < phase)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

static void set_phase(struct thread_arg *t, int phase)
{
	pthread_mutex_lock(&t->lock);
	t->phase = phase;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void *thread_main(void *arg)
{
	struct thread_arg *t = arg;
	unsigned char b[16];

	t->drew = RAND_bytes(b, sizeof(b)) == 1;
	t->before = reseeds(RAND_get0_public(NULL));
	set_phase(t, 1);
	wait_phase(t, 2);
	t->drew &= RAND_bytes(b, sizeof(b)) == 1;
	t->after = reseeds(RAND_get0_public(NULL));
	set_phase(t, 3);
	return NULL;
}

/* A thread started after a move: its DRBG made, then drawn from. */
static void *late_thread(void *arg)
{
	struct thread_arg *t = arg;
	unsigned char b[16];

	t->before = reseeds(RAND_get0_public(NULL));
	t->drew = RAND_bytes(b, sizeof(b)) == 1;
	t->after = reseeds(RAND_get0_public(NULL));
	return NULL;
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Bytes per second of RAND_bytes_ex(ctx, size) over about a second. */
static double rate(OSSL_LIB_CTX *ctx, size_t size)
{
	unsigned char buf[4096];
	double t0 = seconds(), t;
	long n = 0;

	do {
		for (int i = 0; i < 256; i++, n++)
			if (RAND_bytes_ex(ctx, buf, size, 0) != 1)
				return 0;
		t = seconds() - t0;
	} while (t < 1.0);
	return n * size / t;
}

#define ROUNDS 5

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Two library contexts of the same kind: one with the configuration (EPOCH-DRBG), one
 * with the default provider only (CTR-DRBG, OpenSSL's default).
 */
static int bench(void)
{
	const char *conf = getenv("OPENSSL_CONF") ? getenv("OPENSSL_CONF") :
			   "/etc/ssl/openssl.cnf";
	OSSL_LIB_CTX *plain = OSSL_LIB_CTX_new(), *configured = OSSL_LIB_CTX_new();
	size_t sizes[] = { 16, 4096 };

	if (!plain || !configured || !OSSL_PROVIDER_load(plain, "default") ||
	    !OSSL_LIB_CTX_load_config(configured, conf))
		return 1;
	printf("# bench: DRBG of %s: %s; of the default provider alone: %s\n", conf,
	       drbg_name(RAND_get0_public(configured)), drbg_name(RAND_get0_public(plain)));
	for (int k = 0; k < 2; k++) {
		double base[ROUNDS], with[ROUNDS], ratio[ROUNDS];

		/* interleaved rounds, the median of their ratios: noise falls on both */
		for (int r = 0; r < ROUNDS; r++) {
			base[r] = rate(plain, sizes[k]);
			with[r] = rate(configured, sizes[k]);
			ratio[r] = with[r] / base[r];
		}
		qsort(base, ROUNDS, sizeof(double), cmp_double);
		qsort(with, ROUNDS, sizeof(double), cmp_double);
		qsort(ratio, ROUNDS, sizeof(double), cmp_double);
		printf("# bench: RAND_bytes(%zu): %s %.1f MB/s, CTR-DRBG %.1f MB/s (medians of %d), "
		       "ratio %.3f (median; %.3f-%.3f)\n", sizes[k],
		       drbg_name(RAND_get0_public(configured)), with[ROUNDS / 2] / 1e6,
		       base[ROUNDS / 2] / 1e6, ROUNDS, ratio[ROUNDS / 2], ratio[0],
		       ratio[ROUNDS - 1]);
	}
	OSSL_LIB_CTX_free(configured);
	OSSL_LIB_CTX_free(plain);
	return 0;
}

static void *draw(void *arg)
{
	unsigned char b[16];

	*(int *)arg = RAND_bytes(b, sizeof(b)) == 1 && RAND_priv_bytes(b, sizeof(b)) == 1;
	return NULL;
}

/*
 * No RNG epoch (the host's kernel): EPOCH-DRBG is the DRBG, draws in two threads, and
 * the provider said so once on stderr (captured here: the DRBGs are made at first use).
 */
static int fallback(void)
{
	char tmpl[] = "/tmp/epoch-drbg-test.XXXXXX", line[256];
	int err = dup(2), fd = mkstemp(tmpl), drew[2] = { 0, 0 }, said = 0;
	pthread_t th;
	FILE *f;

	printf("# epoch-drbg: no RNG epoch here (RNDEPOCH: %s): the fallback\n", strerror(errno));
	if (err < 0 || fd < 0 || dup2(fd, 2) < 0)
		return 1;
	draw(&drew[0]);
	pthread_create(&th, NULL, draw, &drew[1]);
	pthread_join(th, NULL);
	dup2(err, 2);
	f = fdopen(fd, "r");
	rewind(f);
	while (fgets(line, sizeof(line), f))
		said += !!strstr(line, "EPOCH-DRBG: no RNG epoch");
	fclose(f);
	unlink(tmpl);
	ok(!strcmp(drbg_name(RAND_get0_public(NULL)), "EPOCH-DRBG") &&
	   !strcmp(drbg_name(RAND_get0_primary(NULL)), "EPOCH-DRBG"),
	   "the configuration makes the DRBGs EPOCH-DRBG (%s)", drbg_name(RAND_get0_public(NULL)));
	ok(drew[0] && drew[1], "without an epoch, EPOCH-DRBG draws, in two threads");
	ok(said == 1, "and said once that there is no epoch (%d times)", said);
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	EVP_RAND_CTX *pub, *priv;
	struct thread_arg t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
	struct thread_arg late = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
				   0, 0, 0, 0 };
	unsigned char a[32], b[32];
	unsigned int p0, q0, p1, q1, m0;
	int fds[2], status;
	pthread_t thread;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench();
	if (map_epoch())
		return fallback();
	pub = RAND_get0_public(NULL);
	priv = RAND_get0_private(NULL);
	ok(pub && !strcmp(drbg_name(pub), "EPOCH-DRBG") && !strcmp(drbg_name(priv), "EPOCH-DRBG"),
	   "the configuration makes the public and private DRBGs EPOCH-DRBG (%s, %s)",
	   drbg_name(pub), drbg_name(priv));
	ok(!strcmp(drbg_name(RAND_get0_primary(NULL)), "EPOCH-DRBG"),
	   "and the primary DRBG (%s)", drbg_name(RAND_get0_primary(NULL)));
	ok(EVP_RAND_get_strength(pub) >= 256 && EVP_RAND_get_state(pub) == EVP_RAND_STATE_READY,
	   "strength %u, state ready", EVP_RAND_get_strength(pub));
	ok(RAND_bytes(a, sizeof(a)) == 1 && RAND_priv_bytes(b, sizeof(b)) == 1 &&
	   memcmp(a, b, sizeof(a)), "RAND_bytes and RAND_priv_bytes draw, and differ");

	/* no move: no reseed */
	p0 = reseeds(pub);
	q0 = reseeds(priv);
	RAND_bytes(a, sizeof(a));
	RAND_priv_bytes(b, sizeof(b));
	ok(reseeds(pub) == p0 && reseeds(priv) == q0,
	   "the epoch did not move: no reseed between two calls (%u, %u)", p0, q0);

	pthread_create(&thread, NULL, thread_main, &t);
	wait_phase(&t, 1);
	ok(move_epoch(), "the host moved the epoch");
	p1 = reseeds(pub);
	q1 = reseeds(priv);
	ok(p1 == p0 && q1 == q0, "nothing reseeds before it is asked for bytes");
	RAND_bytes(a, sizeof(a));
	RAND_priv_bytes(b, sizeof(b));
	ok(reseeds(pub) == p0 + 1 && reseeds(priv) == q0 + 1,
	   "the epoch moved between two calls: each DRBG reseeded once before its output "
	   "(public %u -> %u, private %u -> %u)", p0, reseeds(pub), q0, reseeds(priv));
	RAND_bytes(a, sizeof(a));
	ok(reseeds(pub) == p0 + 1, "and not again at the next call");
	set_phase(&t, 2);
	wait_phase(&t, 3);
	pthread_join(thread, NULL);
	ok(t.drew && t.after == t.before + 1,
	   "another thread's DRBG, which drew before the move, reseeded at its next call "
	   "(%u -> %u)", t.before, t.after);

	/* fork, then a move: the child reseeds at it, and its bytes are its own */
	if (pipe(fds))
		return 1;
	pid = fork();
	if (pid == 0) {
		unsigned int c0;

		close(fds[0]);
		RAND_bytes(a, sizeof(a));	/* OpenSSL's fork detection reseeds here */
		c0 = reseeds(RAND_get0_public(NULL));
		if (!move_epoch())
			_exit(2);
		RAND_bytes(a, sizeof(a));
		if (write(fds[1], a, sizeof(a)) != sizeof(a))
			_exit(3);
		_exit(reseeds(RAND_get0_public(NULL)) == c0 + 1 ? 0 : 1);
	}
	close(fds[1]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "after fork, a child's DRBG reseeds when the epoch moves (status %d)", status);
	RAND_bytes(b, sizeof(b));
	ok(read(fds[0], a, sizeof(a)) == sizeof(a) && memcmp(a, b, sizeof(a)),
	   "parent and child draw different bytes after the same move");

	/*
	 * A move, then a new thread: its DRBG is seeded from a primary that has not
	 * reseeded since (state every clone shares), and reseeds, the primary first, at
	 * its first output.
	 */
	m0 = reseeds(RAND_get0_primary(NULL));
	ok(move_epoch(), "the host moved the epoch again");
	pthread_create(&thread, NULL, late_thread, &late);
	pthread_join(thread, NULL);
	ok(late.drew && late.after == late.before + 1 &&
	   reseeds(RAND_get0_primary(NULL)) == m0 + 1,
	   "a thread's DRBG made after the move from a primary that had not reseeded since: "
	   "both reseeded once before its first output (thread %u -> %u, primary %u -> %u)",
	   late.before, late.after, m0, reseeds(RAND_get0_primary(NULL)));
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}

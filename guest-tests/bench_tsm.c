// SPDX-License-Identifier: GPL-2.0
/*
 * bench_tsm - attestation reports per second through configfs-tsm, and the responder's
 * own share of each (docs/benchmarks.md).
 *
 * One report = mkdir, write a 64-byte inblob, read outblob, rmdir: what an attestation
 * agent does per request.  Run N reports one at a time, then with 8 threads at a time
 * (each thread its own item), and print reports/s, p50 and p99 latency.  In the serial
 * phase the responder's LAST_NS register gives the time QEMU spent in each request (its
 * native code, even under TCG), printed as p50/p99 with its share of the guest's latency.
 * As a baseline, the same flow through the legacy SNP_GET_EXT_REPORT ioctl.
 *
 * usage: bench_tsm [N]   (default 200)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/sev-guest.h>

#include "tsm_util.h"

#define THREADS	8

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	qsort(v, n, sizeof(*v), cmp_double);
	return v[i];
}

/* One report through configfs with @seq as nonce; 0 or an errno. */
static int one_report(const char *item, int seq)
{
	uint8_t nonce[TSM_INBLOB_MAX] = { 0 }, report[SNP_REPORT_SIZE];
	const char *stage;

	memcpy(nonce, &seq, sizeof(seq));
	return tsm_report_once(item, nonce, report, &stage);
}

struct job {
	pthread_t thread;
	int id, count, err;
	double *lat;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	char item[64];
	int i;

	for (i = 0; i < j->count && !j->err; i++) {
		double t0 = now_us();

		snprintf(item, sizeof(item), "b%d-%d", j->id, i);
		j->err = one_report(item, j->id * 100000 + i);
		j->lat[i] = now_us() - t0;
	}
	return NULL;
}

static void report_line(const char *what, double *lat, int n, double wall_us)
{
	printf("%-34s %4d reports  %7.1f reports/s  p50 %7.0f us  p99 %7.0f us\n", what, n,
	       n / (wall_us / 1e6), pct(lat, n, 0.5), pct(lat, n, 0.99));
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	double *lat = calloc(n, sizeof(double)), *psp = calloc(n, sizeof(double));
	volatile uint8_t *regs = responder_map();
	struct job jobs[THREADS];
	double t0, wall, share, serial_p50;
	int i, fd, per;

	if (!lat || !psp || n < THREADS) {
		fprintf(stderr, "bench_tsm: bad N\n");
		return 2;
	}
	if (!regs || tsm_mkdir("probe") == ENXIO) {
		fprintf(stderr, "bench_tsm: no sev-snp-responder / TSM provider in this guest\n");
		return 1;
	}
	tsm_rmdir("probe");

	/* 1 at a time: latency, and the responder's own time per request. */
	t0 = now_us();
	for (i = 0; i < n; i++) {
		double t = now_us();
		int err = one_report("serial", i);

		lat[i] = now_us() - t;
		psp[i] = responder_reg64(regs, RESP_REG_LAST_NS) / 1e3;
		if (err) {
			fprintf(stderr, "bench_tsm: report %d: %s\n", i, strerror(err));
			return 1;
		}
	}
	wall = now_us() - t0;
	report_line("configfs-tsm, 1 at a time:", lat, n, wall);
	serial_p50 = pct(lat, n, 0.5);
	share = 100 * pct(psp, n, 0.5) / pct(lat, n, 0.5);
	printf("%-34s %4d requests  p50 %7.0f us  p99 %7.0f us  max %7.0f us  (%.0f %% of the "
	       "guest's p50)\n", "responder in QEMU (LAST_NS):", n, pct(psp, n, 0.5),
	       pct(psp, n, 0.99), pct(psp, n, 1.0), share);

	/* 8 at a time. */
	per = n / THREADS;
	t0 = now_us();
	for (i = 0; i < THREADS; i++) {
		jobs[i] = (struct job){ .id = i, .count = per, .lat = lat + i * per };
		pthread_create(&jobs[i].thread, NULL, worker, &jobs[i]);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(jobs[i].thread, NULL);
		if (jobs[i].err) {
			fprintf(stderr, "bench_tsm: thread %d: %s\n", i, strerror(jobs[i].err));
			return 1;
		}
	}
	wall = now_us() - t0;
	report_line("configfs-tsm, 8 at a time:", lat, per * THREADS, wall);

	/* Baseline: the legacy extended-report ioctl, the same PSP work without configfs. */
	fd = open("/dev/sev-guest", O_RDWR);
	if (fd < 0) {
		perror("bench_tsm: /dev/sev-guest");
		return 1;
	}
	t0 = now_us();
	for (i = 0; i < n; i++) {
		static uint8_t certs[16384];
		struct snp_report_resp resp;
		struct snp_ext_report_req ext = {
			.data.vmpl = sev_vmpck_id(),
			.certs_address = (uintptr_t)certs,
			.certs_len = sizeof(certs),
		};
		struct snp_guest_request_ioctl io = {
			.msg_version = 1,
			.req_data = (uintptr_t)&ext,
			.resp_data = (uintptr_t)&resp,
		};
		double t = now_us();

		if (ioctl(fd, SNP_GET_EXT_REPORT, &io)) {
			perror("bench_tsm: SNP_GET_EXT_REPORT");
			return 1;
		}
		lat[i] = now_us() - t;
	}
	wall = now_us() - t0;
	report_line("ioctl SNP_GET_EXT_REPORT (baseline):", lat, n, wall);
	printf("configfs-tsm p50 / ioctl p50: %.2fx (mkdir, inblob, outblob, rmdir "
	       "around the same request)\n", serial_p50 / pct(lat, n, 0.5));
	close(fd);
	return 0;
}

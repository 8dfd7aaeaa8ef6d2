// SPDX-License-Identifier: GPL-2.0
/*
 * tsm_report - the configfs-tsm attestation-report ABI (upstream v6.7,
 * Documentation/ABI/testing/configfs-tsm) with sev-guest as its provider, and the
 * legacy /dev/sev-guest ioctls beside it.
 *
 * Needs the sev-snp-responder device (docs/snp-responder.md) and the kernel's test
 * transport; without a provider every case is skipped with that reason (the ENXIO case
 * is tsm_no_provider).  Run once with the default vmpck_id 0 and once with
 * sev_guest.vmpck_id=2, where privlevel_floor is 2 and the floor cases run.
 *
 * With snp_nonce=HEX128 on the kernel command line the case 'report_for_the_host' writes
 * that nonce and prints outblob and auxblob as '# snp-outblob NNNN: HEX' lines, which
 * scripts/check-attest.py checks with the openssl command-line tool.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sev-guest.h>

#include "cmdline.h"
#include "kselftest_harness.h"
#include "harness_compat.h"
#include "tsm_util.h"

#define CERTS_MAX	(16 * 1024)	/* SEV_FW_BLOB_MAX_SIZE */
#define CONCURRENT	64

static void fill_nonce(uint8_t *nonce, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(nonce + got, len - got, 0);

		if (n > 0)
			got += n;
	}
}

static uint64_t responder_requests(volatile uint8_t *regs)
{
	return regs ? responder_reg64(regs, RESP_REG_REQUESTS) : 0;
}

/* --- configfs-tsm -------------------------------------------------------------------- */

FIXTURE(tsm) {
	char item[64];
	int floor;
	volatile uint8_t *regs;
	uint8_t nonce[TSM_INBLOB_MAX];
	uint8_t report[SNP_REPORT_SIZE + 1];
};

FIXTURE_SETUP(tsm)
{
	int err;

	snprintf(self->item, sizeof(self->item), "t%d", getpid());
	err = tsm_mkdir(self->item);
	if (err == ENXIO || err == ENOENT)
		SKIP(return, "no TSM provider (%s): this guest has no sev-snp-responder device",
		     strerror(err));
	ASSERT_EQ(0, err) TH_LOG("mkdir %s: %s", self->item, strerror(err));
	self->floor = sev_vmpck_id();
	ASSERT_LE(0, self->floor) TH_LOG("sev_guest.vmpck_id unreadable");
	self->regs = responder_map();
	ASSERT_NE(NULL, self->regs) TH_LOG("the responder's BAR0 (1b36:0f53) not mappable");
	ASSERT_EQ(RESPONDER_MAGIC, *(volatile uint32_t *)(self->regs + RESP_REG_MAGIC));
	fill_nonce(self->nonce, sizeof(self->nonce));
}

FIXTURE_TEARDOWN(tsm)
{
	if (!HARNESS_SKIPPED(_metadata))
		EXPECT_EQ(0, tsm_rmdir(self->item));
}


TEST_F(tsm, provider_is_sev_guest)
{
	char buf[64] = "";

	RETURN_IF_SKIPPED();
	ASSERT_LT(0, tsm_read(self->item, "provider", buf, sizeof(buf) - 1));
	EXPECT_STREQ("sev_guest\n", buf);
}

TEST_F(tsm, privlevel_floor_is_vmpck_id)
{
	RETURN_IF_SKIPPED();
	EXPECT_EQ(self->floor, tsm_read_num(self->item, "privlevel_floor"));
}

TEST_F(tsm, generation_starts_at_0)
{
	RETURN_IF_SKIPPED();
	EXPECT_EQ(0, tsm_read_num(self->item, "generation"));
}

TEST_F(tsm, outblob_before_inblob_is_einval)
{
	RETURN_IF_SKIPPED();
	EXPECT_EQ(-EINVAL, tsm_read(self->item, "outblob", self->report, sizeof(self->report)));
	EXPECT_EQ(-EINVAL, tsm_read(self->item, "auxblob", self->report, sizeof(self->report)));
}

TEST_F(tsm, inblob_over_64_bytes_is_efbig_and_changes_nothing)
{
	uint8_t big[TSM_INBLOB_MAX + 1] = { 0 };

	RETURN_IF_SKIPPED();
	EXPECT_EQ(EFBIG, tsm_write(self->item, "inblob", big, sizeof(big)));
	EXPECT_EQ(0, tsm_read_num(self->item, "generation"));
	EXPECT_EQ(-EINVAL, tsm_read(self->item, "outblob", self->report, sizeof(self->report)));
}

TEST_F(tsm, inblob_of_63_bytes_is_einval_for_sev_guest)
{
	RETURN_IF_SKIPPED();
	/* configfs-tsm takes up to 64 bytes; sev-guest's REPORT_DATA is exactly 64. */
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, 63));
	EXPECT_EQ(1, tsm_read_num(self->item, "generation"));
	EXPECT_EQ(-EINVAL, tsm_read(self->item, "outblob", self->report, sizeof(self->report)));
}

TEST_F(tsm, inblob_and_outblob_have_fixed_directions)
{
	char p[256];

	RETURN_IF_SKIPPED();
	tsm_path(p, sizeof(p), self->item, "inblob");
	EXPECT_EQ(-1, open(p, O_RDONLY));
	EXPECT_EQ(EACCES, errno);
	tsm_path(p, sizeof(p), self->item, "outblob");
	EXPECT_EQ(-1, open(p, O_WRONLY));
	EXPECT_EQ(EACCES, errno);
	tsm_path(p, sizeof(p), self->item, "generation");
	EXPECT_EQ(-1, open(p, O_WRONLY));
	EXPECT_EQ(EACCES, errno);
}

TEST_F(tsm, report_carries_the_nonce_at_the_floor_vmpl)
{
	const uint8_t *r = self->report;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
					    sizeof(self->report)));
	EXPECT_TRUE(get_le32(r + SNP_REPORT_VERSION) == 2 || get_le32(r + SNP_REPORT_VERSION) == 3);
	EXPECT_EQ(1, get_le32(r + SNP_REPORT_SIG_ALGO));
	EXPECT_EQ(0, memcmp(r + SNP_REPORT_DATA, self->nonce, sizeof(self->nonce)));
	/* An item that never had privlevel written asks for the lowest it may. */
	EXPECT_EQ(self->floor, get_le32(r + SNP_REPORT_VMPL));
}

TEST_F(tsm, inblob_written_in_pieces_is_one_inblob)
{
	char p[256];
	int fd;

	RETURN_IF_SKIPPED();
	tsm_path(p, sizeof(p), self->item, "inblob");
	fd = open(p, O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(32, write(fd, self->nonce, 32));
	ASSERT_EQ(32, write(fd, self->nonce + 32, 32));
	ASSERT_EQ(0, close(fd));
	EXPECT_EQ(1, tsm_read_num(self->item, "generation"));
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
					    sizeof(self->report)));
	EXPECT_EQ(0, memcmp(self->report + SNP_REPORT_DATA, self->nonce, sizeof(self->nonce)));
}

TEST_F(tsm, outblob_is_one_request_until_the_next_write)
{
	static uint8_t table[CERTS_MAX];
	uint8_t again[SNP_REPORT_SIZE];
	uint8_t piece[100];
	uint64_t before, after_first, after_second;
	size_t off = 0;
	ssize_t n;
	char p[256];
	int fd;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	before = responder_requests(self->regs);
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
					    sizeof(self->report)));
	after_first = responder_requests(self->regs);
	/* One extended request: the 4 pages sev-guest offers hold the table. */
	EXPECT_EQ(before + 1, after_first);

	/* Read again, in 100-byte pieces: the cached report, no new PSP request. */
	tsm_path(p, sizeof(p), self->item, "outblob");
	fd = open(p, O_RDONLY);
	ASSERT_LE(0, fd);
	while ((n = read(fd, piece, sizeof(piece))) > 0) {
		ASSERT_GE(sizeof(again), off + n);
		memcpy(again + off, piece, n);
		off += n;
	}
	close(fd);
	EXPECT_EQ(SNP_REPORT_SIZE, off);
	EXPECT_EQ(0, memcmp(self->report, again, SNP_REPORT_SIZE));
	/* auxblob came with the same extended request. */
	ASSERT_LT(0, tsm_read(self->item, "auxblob", table, sizeof(table)));
	EXPECT_EQ(after_first, responder_requests(self->regs));

	/* The same inblob written again is a new generation and a new report. */
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", again, sizeof(again)));
	after_second = responder_requests(self->regs);
	EXPECT_EQ(after_first + 1, after_second);
	EXPECT_EQ(0, memcmp(again + SNP_REPORT_DATA, self->nonce, sizeof(self->nonce)));
	/* ECDSA signs with a fresh k: a new request is a new signature. */
	EXPECT_NE(0, memcmp(again + SNP_REPORT_SIG, self->report + SNP_REPORT_SIG, 144));
}

TEST_F(tsm, auxblob_is_the_certificate_table)
{
	static uint8_t table[CERTS_MAX + 1];
	const uint8_t *guids[] = { GUID_VCEK, GUID_ASK, GUID_ARK };
	ssize_t len;
	int i;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	len = tsm_read(self->item, "auxblob", table, sizeof(table));
	ASSERT_LT(4 * (ssize_t)sizeof(struct cert_entry), len) TH_LOG("auxblob: %zd", len);
	ASSERT_GE(CERTS_MAX, len);
	for (i = 0; i < 3; i++) {
		const struct cert_entry *e = cert_find(table, len, guids[i]);

		ASSERT_NE(NULL, e) TH_LOG("certificate %d missing from the table", i);
		/* A DER certificate: SEQUENCE with a two-byte length covering it all. */
		EXPECT_EQ(0x30, table[e->offset]);
		EXPECT_EQ(0x82, table[e->offset + 1]);
		EXPECT_EQ(e->length, 4u + (table[e->offset + 2] << 8 | table[e->offset + 3]));
	}
}

TEST_F(tsm, generation_counts_every_successful_write)
{
	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	EXPECT_EQ(1, tsm_read_num(self->item, "generation"));
	/* The same bytes again still count: generation counts writes, not changes. */
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	EXPECT_EQ(2, tsm_read_num(self->item, "generation"));
	ASSERT_EQ(0, tsm_write_str(self->item, "privlevel", "3"));
	EXPECT_EQ(3, tsm_read_num(self->item, "generation"));
	ASSERT_EQ(EINVAL, tsm_write_str(self->item, "privlevel", "4"));
	EXPECT_EQ(3, tsm_read_num(self->item, "generation"));
	/* Reading the report does not count. */
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
					    sizeof(self->report)));
	EXPECT_EQ(3, tsm_read_num(self->item, "generation"));
}

TEST_F(tsm, privlevel_refuses_values_out_of_floor_to_3)
{
	char v[16];

	RETURN_IF_SKIPPED();
	EXPECT_EQ(EINVAL, tsm_write_str(self->item, "privlevel", "4"));
	EXPECT_EQ(EINVAL, tsm_write_str(self->item, "privlevel", "-1"));
	EXPECT_EQ(EINVAL, tsm_write_str(self->item, "privlevel", "vmpl1"));
	EXPECT_EQ(0, tsm_read_num(self->item, "generation"));
	snprintf(v, sizeof(v), "%d", self->floor);
	EXPECT_EQ(0, tsm_write_str(self->item, "privlevel", v));
	EXPECT_EQ(1, tsm_read_num(self->item, "generation"));
}

TEST_F(tsm, privlevel_below_the_floor_is_einval)
{
	char v[16];
	int level;

	RETURN_IF_SKIPPED();
	if (self->floor == 0)
		SKIP(return, "privlevel_floor is 0 (vmpck_id 0); the run with "
		     "sev_guest.vmpck_id=2 tests the floor");
	for (level = 0; level < self->floor; level++) {
		snprintf(v, sizeof(v), "%d", level);
		EXPECT_EQ(EINVAL, tsm_write_str(self->item, "privlevel", v));
	}
	EXPECT_EQ(0, tsm_read_num(self->item, "generation"));
}

TEST_F(tsm, privlevel_is_the_report_vmpl)
{
	int level;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	for (level = self->floor; level <= TSM_PRIVLEVEL_MAX; level++) {
		char v[16];

		snprintf(v, sizeof(v), "%d", level);
		ASSERT_EQ(0, tsm_write_str(self->item, "privlevel", v));
		ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
						    sizeof(self->report)));
		EXPECT_EQ(level, get_le32(self->report + SNP_REPORT_VMPL));
	}
}

TEST_F(tsm, a_second_writer_is_seen_in_generation)
{
	uint8_t other[TSM_INBLOB_MAX];
	long long gen;
	pid_t pid;
	int status;

	RETURN_IF_SKIPPED();
	/*
	 * The protocol of the ABI document: read generation, write, read the report,
	 * read generation again; more than one write in between means someone else
	 * wrote, and the report may be theirs.
	 */
	gen = tsm_read_num(self->item, "generation");
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	fill_nonce(other, sizeof(other));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(tsm_write(self->item, "inblob", other, sizeof(other)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
					    sizeof(self->report)));
	EXPECT_EQ(gen + 2, tsm_read_num(self->item, "generation"))
		TH_LOG("the conflict must show as two writes, not one");
	EXPECT_EQ(0, memcmp(self->report + SNP_REPORT_DATA, other, sizeof(other)));
}

struct worker {
	pthread_t thread;
	int index;
	int err;
	char what[96];
	double ms;
};

static void *concurrent_worker(void *arg)
{
	struct worker *w = arg;
	uint8_t nonce[TSM_INBLOB_MAX], report[SNP_REPORT_SIZE];
	struct timespec t0, t1;
	const char *stage;
	char item[64];

	snprintf(item, sizeof(item), "c%d-%d", getpid(), w->index);
	fill_nonce(nonce, sizeof(nonce));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	w->err = tsm_report_once(item, nonce, report, &stage);
	if (w->err)
		snprintf(w->what, sizeof(w->what), "%s", w->err == EBADMSG ?
			 "REPORT_DATA is another item's nonce" : stage);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	w->ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	return NULL;
}

TEST_F(tsm, sixty_four_items_at_once_get_their_own_reports)
{
	static struct worker w[CONCURRENT];
	double worst = 0;
	int i, failed = 0;

	RETURN_IF_SKIPPED();
	for (i = 0; i < CONCURRENT; i++) {
		w[i].index = i;
		ASSERT_EQ(0, pthread_create(&w[i].thread, NULL, concurrent_worker, &w[i]));
	}
	for (i = 0; i < CONCURRENT; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].err) {
			failed++;
			TH_LOG("item %d: %s (%s)", i, w[i].what, strerror(w[i].err));
		}
		if (w[i].ms > worst)
			worst = w[i].ms;
	}
	EXPECT_EQ(0, failed);
	TH_LOG("%d items, slowest mkdir..rmdir %.1f ms", CONCURRENT, worst);
}

/* The nonce of snp_nonce=HEX on the kernel command line: true when given. */
static bool cmdline_nonce(uint8_t *nonce)
{
	char hex[2 * TSM_INBLOB_MAX + 1];
	int i;

	if (!cmdline_value("snp_nonce", hex, sizeof(hex)))
		return false;
	for (i = 0; i < TSM_INBLOB_MAX; i++) {
		unsigned int byte;

		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return false;
		nonce[i] = byte;
	}
	return true;
}

static void print_hex(const char *tag, const uint8_t *buf, size_t len)
{
	size_t off, i;

	printf("# %s-len: %zu\n", tag, len);
	for (off = 0; off < len; off += 64) {
		printf("# %s %04zx: ", tag, off);
		for (i = off; i < len && i < off + 64; i++)
			printf("%02x", buf[i]);
		printf("\n");
	}
	fflush(stdout);
}

TEST_F(tsm, report_for_the_host)
{
	static uint8_t table[CERTS_MAX];
	ssize_t len;

	RETURN_IF_SKIPPED();
	if (!cmdline_nonce(self->nonce))
		SKIP(return, "no snp_nonce= on the kernel command line (scripts/check-attest.py "
		     "gives one)");
	ASSERT_EQ(0, tsm_write(self->item, "inblob", self->nonce, sizeof(self->nonce)));
	ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(self->item, "outblob", self->report,
					    sizeof(self->report)));
	len = tsm_read(self->item, "auxblob", table, sizeof(table));
	ASSERT_LT(0, len);
	print_hex("snp-outblob", self->report, SNP_REPORT_SIZE);
	print_hex("snp-auxblob", table, len);
}

/* --- the legacy ioctls --------------------------------------------------------------- */

struct report_resp {
	uint32_t status;
	uint32_t report_size;
	uint8_t rsvd[24];
	uint8_t report[SNP_REPORT_SIZE];
};

FIXTURE(legacy) {
	int fd;
	int floor;
	struct snp_report_req req;
	struct snp_report_resp resp;
	struct snp_guest_request_ioctl io;
};

FIXTURE_SETUP(legacy)
{
	self->fd = open("/dev/sev-guest", O_RDWR);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "no /dev/sev-guest: this guest has no sev-snp-responder device");
	ASSERT_LE(0, self->fd) TH_LOG("/dev/sev-guest: %s", strerror(errno));
	self->floor = sev_vmpck_id();
	ASSERT_LE(0, self->floor);
	memset(&self->req, 0, sizeof(self->req));
	fill_nonce(self->req.user_data, sizeof(self->req.user_data));
	self->req.vmpl = self->floor;
	memset(&self->resp, 0, sizeof(self->resp));
	memset(&self->io, 0, sizeof(self->io));
	self->io.msg_version = 1;
	self->io.req_data = (uintptr_t)&self->req;
	self->io.resp_data = (uintptr_t)&self->resp;
}

FIXTURE_TEARDOWN(legacy)
{
	if (self->fd >= 0)
		close(self->fd);
}

static const struct report_resp *as_report(const struct snp_report_resp *r)
{
	return (const struct report_resp *)r->data;
}

TEST_F(legacy, get_report)
{
	const struct report_resp *r = as_report(&self->resp);

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, ioctl(self->fd, SNP_GET_REPORT, &self->io)) TH_LOG("%s, exitinfo2 0x%llx",
		strerror(errno), (unsigned long long)self->io.exitinfo2);
	EXPECT_EQ(0, r->status);
	EXPECT_EQ(SNP_REPORT_SIZE, r->report_size);
	EXPECT_EQ(0, memcmp(r->report + SNP_REPORT_DATA, self->req.user_data, 64));
	EXPECT_EQ(self->floor, get_le32(r->report + SNP_REPORT_VMPL));
}

TEST_F(legacy, msg_version_0_is_einval)
{
	RETURN_IF_SKIPPED();
	self->io.msg_version = 0;
	EXPECT_EQ(-1, ioctl(self->fd, SNP_GET_REPORT, &self->io));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(legacy, missing_buffers_are_einval_bad_ones_efault)
{
	RETURN_IF_SKIPPED();
	self->io.resp_data = 0;
	EXPECT_EQ(-1, ioctl(self->fd, SNP_GET_REPORT, &self->io));
	EXPECT_EQ(EINVAL, errno);
	self->io.resp_data = (uintptr_t)&self->resp;
	self->io.req_data = 8;
	EXPECT_EQ(-1, ioctl(self->fd, SNP_GET_REPORT, &self->io));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, SNP_GET_REPORT, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	/* None of that reached the PSP: the VMPCK still works. */
	self->io.req_data = (uintptr_t)&self->req;
	EXPECT_EQ(0, ioctl(self->fd, SNP_GET_REPORT, &self->io));
}

TEST_F(legacy, report_below_the_floor_is_refused_by_the_psp)
{
	RETURN_IF_SKIPPED();
	if (self->floor == 0)
		SKIP(return, "vmpck_id 0: no VMPL below it (the sev_guest.vmpck_id=2 run tests it)");
	self->req.vmpl = self->floor - 1;
	ASSERT_EQ(0, ioctl(self->fd, SNP_GET_REPORT, &self->io));
	EXPECT_EQ(SEV_RET_INVALID_PARAM, as_report(&self->resp)->status);
	EXPECT_EQ(0, as_report(&self->resp)->report_size);
}

/*
 * An extended request with a certificate buffer of @certs_len bytes, too small for the
 * fake chain (ARK, ASK: RSA-4096; VCEK: P-384), which needs two pages: EIO, the VMM's
 * INVALID_LEN, and the size needed written back.  sev-guest re-sent the message as a
 * plain request, so the sequence number stayed in step and the VMPCK is intact.
 */
static void ext_report_too_small(struct __test_metadata *_metadata, int fd,
				 struct snp_ext_report_req *ext, struct snp_report_resp *resp)
{
	struct snp_guest_request_ioctl io = {
		.msg_version = 1,
		.req_data = (uintptr_t)ext,
		.resp_data = (uintptr_t)resp,
	};

	ASSERT_EQ(-1, ioctl(fd, SNP_GET_EXT_REPORT, &io));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(SNP_GUEST_VMM_ERR_INVALID_LEN, io.vmm_error);
	EXPECT_EQ(8192, ext->certs_len);
	io.req_data = (uintptr_t)&ext->data;
	io.exitinfo2 = 0;
	EXPECT_EQ(0, ioctl(fd, SNP_GET_REPORT, &io)) TH_LOG("VMPCK lost: %s", strerror(errno));
}

TEST_F(legacy, ext_report_without_a_buffer_is_told_the_size)
{
	struct snp_ext_report_req ext = { .data = self->req };

	RETURN_IF_SKIPPED();
	/* certs_len 0 still sends an extended request, with 0 pages, as KVM gets it. */
	ext_report_too_small(_metadata, self->fd, &ext, &self->resp);
}

TEST_F(legacy, ext_report_too_small_then_big_enough)
{
	static uint8_t certs[CERTS_MAX];
	struct snp_ext_report_req ext = {
		.data = self->req,
		.certs_address = (uintptr_t)certs,
		.certs_len = 4096,
	};
	const struct cert_entry *e;

	RETURN_IF_SKIPPED();
	ext_report_too_small(_metadata, self->fd, &ext, &self->resp);
	self->io.req_data = (uintptr_t)&ext;
	ASSERT_EQ(0, ioctl(self->fd, SNP_GET_EXT_REPORT, &self->io)) TH_LOG("%s, exitinfo2 0x%llx",
		strerror(errno), (unsigned long long)self->io.exitinfo2);
	e = cert_find(certs, ext.certs_len, GUID_VCEK);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(0x30, certs[e->offset]);
	EXPECT_NE(NULL, cert_find(certs, ext.certs_len, GUID_ASK));
	EXPECT_NE(NULL, cert_find(certs, ext.certs_len, GUID_ARK));
}

TEST_F(legacy, ext_report_certs_len_must_be_whole_pages)
{
	static uint8_t certs[CERTS_MAX];
	struct snp_ext_report_req ext = {
		.data = self->req,
		.certs_address = (uintptr_t)certs,
		.certs_len = 5000,
	};

	RETURN_IF_SKIPPED();
	self->io.req_data = (uintptr_t)&ext;
	EXPECT_EQ(-1, ioctl(self->fd, SNP_GET_EXT_REPORT, &self->io));
	EXPECT_EQ(EINVAL, errno);
	ext.certs_len = 2 * CERTS_MAX;
	EXPECT_EQ(-1, ioctl(self->fd, SNP_GET_EXT_REPORT, &self->io));
	EXPECT_EQ(EINVAL, errno);
}

static int derive(int fd, uint32_t root, uint64_t fields, uint32_t vmpl, uint8_t key[32],
		  uint32_t *status)
{
	struct snp_derived_key_req req = {
		.root_key_select = root,
		.guest_field_select = fields,
		.vmpl = vmpl,
	};
	struct snp_derived_key_resp resp = { 0 };
	struct snp_guest_request_ioctl io = {
		.msg_version = 1,
		.req_data = (uintptr_t)&req,
		.resp_data = (uintptr_t)&resp,
	};
	int rc = ioctl(fd, SNP_GET_DERIVED_KEY, &io);

	*status = get_le32(resp.data);
	memcpy(key, resp.data + 32, 32);
	return rc;
}

TEST_F(legacy, derived_key_depends_on_vmpl_and_fields_only)
{
	static const uint8_t zero[32];
	uint8_t a[32], b[32], c[32], d[32];
	uint32_t st;
	int up = self->floor < 3 ? self->floor + 1 : self->floor;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, derive(self->fd, 0, 0, self->floor, a, &st));
	ASSERT_EQ(0, st);
	EXPECT_NE(0, memcmp(a, zero, 32));
	ASSERT_EQ(0, derive(self->fd, 0, 0, self->floor, b, &st));
	EXPECT_EQ(0, memcmp(a, b, 32)) TH_LOG("the same request must give the same key");
	ASSERT_EQ(0, derive(self->fd, 0, 1 << 3, self->floor, c, &st));
	ASSERT_EQ(0, st);
	EXPECT_NE(0, memcmp(a, c, 32)) TH_LOG("selecting MEASUREMENT must change the key");
	if (up != self->floor) {
		ASSERT_EQ(0, derive(self->fd, 0, 0, up, d, &st));
		ASSERT_EQ(0, st);
		EXPECT_NE(0, memcmp(a, d, 32)) TH_LOG("another VMPL must give another key");
	}
}

TEST_F(legacy, derived_key_refusals_come_from_the_psp)
{
	uint8_t key[32];
	static const uint8_t zero[32];
	uint32_t st;

	RETURN_IF_SKIPPED();
	/* Unknown guest_field_select bit, and the VMRK this fake does not have. */
	ASSERT_EQ(0, derive(self->fd, 0, 1 << 6, self->floor, key, &st));
	EXPECT_EQ(SEV_RET_INVALID_PARAM, st);
	EXPECT_EQ(0, memcmp(key, zero, 32));
	ASSERT_EQ(0, derive(self->fd, 1, 0, self->floor, key, &st));
	EXPECT_EQ(SEV_RET_INVALID_PARAM, st);
	ASSERT_EQ(0, derive(self->fd, 0, 0, 4, key, &st));
	EXPECT_EQ(SEV_RET_INVALID_PARAM, st);
	/* Refused in the answer, not as a failed message: the VMPCK is still there. */
	ASSERT_EQ(0, derive(self->fd, 0, 0, self->floor, key, &st));
	EXPECT_EQ(0, st);
}

TEST_F(legacy, configfs_and_ioctl_share_one_sequence)
{
	char item[64];
	uint8_t report[SNP_REPORT_SIZE];

	RETURN_IF_SKIPPED();
	/* Interleave the two paths: one VMPCK, one sequence number, no IV reuse. */
	snprintf(item, sizeof(item), "mix%d", getpid());
	ASSERT_EQ(0, tsm_mkdir(item));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, ioctl(self->fd, SNP_GET_REPORT, &self->io));
		ASSERT_EQ(0, tsm_write(item, "inblob", self->req.user_data, 64));
		ASSERT_EQ(SNP_REPORT_SIZE, tsm_read(item, "outblob", report, sizeof(report)));
	}
	EXPECT_EQ(0, tsm_rmdir(item));
}

/* --- the test transport's remove path ------------------------------------------------ */

/*
 * Unbinding the test transport takes sev-guest's device with it: /dev/sev-guest and the
 * TSM provider go, and a /dev/sev-guest still open fails with ENODEV from then on; binding
 * it again brings both back, and reports work as before (the sequence numbers are in the
 * device's secrets page, which stays).  No report item may exist meanwhile: configfs-tsm
 * refuses a provider while there are items.  CONFIG_DMA_API_DEBUG checks the unbind too:
 * DMA memory the transport left behind would be a WARNING, which fails the run.
 */
TEST(transport_unbind_and_bind_again)
{
	struct snp_report_req req = { 0 };
	struct snp_report_resp resp;
	struct snp_guest_request_ioctl io = {
		.msg_version = 1,
		.req_data = (uintptr_t)&req,
		.resp_data = (uintptr_t)&resp,
	};
	uint8_t nonce[TSM_INBLOB_MAX], report[SNP_REPORT_SIZE];
	char bdf[64], item[64];
	const char *stage;
	int held, fd;

	if (access("/dev/sev-guest", F_OK))
		SKIP(return, "no /dev/sev-guest: this guest has no sev-snp-responder device");
	ASSERT_EQ(0, transport_device(bdf, sizeof(bdf)));
	if (access(TRANSPORT_DRIVER "/unbind", W_OK))
		SKIP(return, "the test transport cannot be unbound in this kernel (%s)",
		     strerror(errno));
	req.vmpl = sev_vmpck_id();
	ASSERT_LE(0, (int)req.vmpl);
	fill_nonce(req.user_data, sizeof(req.user_data));
	snprintf(item, sizeof(item), "u%d", getpid());
	held = open("/dev/sev-guest", O_RDWR);
	ASSERT_LE(0, held);
	ASSERT_EQ(0, ioctl(held, SNP_GET_REPORT, &io)) TH_LOG("before: %s", strerror(errno));

	ASSERT_EQ(0, transport_bind("unbind", bdf));
	EXPECT_EQ(-1, access("/dev/sev-guest", F_OK));
	EXPECT_EQ(ENXIO, tsm_mkdir(item));
	EXPECT_EQ(-1, ioctl(held, SNP_GET_REPORT, &io));
	EXPECT_EQ(ENODEV, errno);

	ASSERT_EQ(0, transport_bind("bind", bdf)) TH_LOG("bind %s", bdf);
	fill_nonce(nonce, sizeof(nonce));
	EXPECT_EQ(0, tsm_report_once(item, nonce, report, &stage)) TH_LOG("after bind: %s", stage);
	fd = open("/dev/sev-guest", O_RDWR);
	ASSERT_LE(0, fd) TH_LOG("/dev/sev-guest after bind: %s", strerror(errno));
	EXPECT_EQ(0, ioctl(fd, SNP_GET_REPORT, &io)) TH_LOG("after bind: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(as_report(&resp)->report + SNP_REPORT_DATA, req.user_data, 64));
	/* The file opened before still belongs to the device that went. */
	EXPECT_EQ(-1, ioctl(held, SNP_GET_REPORT, &io));
	EXPECT_EQ(ENODEV, errno);
	close(fd);
	close(held);
}

TEST_HARNESS_MAIN

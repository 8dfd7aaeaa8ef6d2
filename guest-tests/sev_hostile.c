// SPDX-License-Identifier: GPL-2.0
/*
 * sev_hostile - sev-guest against a hostile host.  The host boots the guest with
 * the responder's fault injection, sev-snp-responder,x-fault=MODE, and snp_fault=MODE on
 * the kernel command line (scripts/check-hostile.py).  Every request is then answered:
 *
 *   wrong-seqno      authentic, but numbered as another request's response
 *   bad-tag          with one bit of the AES-GCM tag flipped
 *   no-response      not at all (the response page stays as the guest cleared it)
 *   oversize-report  with a report_size beyond the response page
 *   bad-status       with a status the SEV-SNP firmware does not define
 *
 * The first three are responses sev-guest cannot trust: the attestation request fails
 * with EBADMSG and the VMPCK is wiped (its sequence number, the IV, may have been used
 * by the host), so the next request, ioctl or configfs, fails with ENOTTY.  The last two
 * are authentic responses with bad contents: configfs-tsm refuses them (EIO for the size,
 * ENXIO for the status), the key stays, and SNP_GET_REPORT, which hands user space the
 * response as it came, still works and shows what the host said.  (Upstream sev-guest
 * says ENOMEM for the size; the 6.12 series makes it EIO, as our 6.1 backport does.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/sev-guest.h>

#include "kselftest_harness.h"
#include "cmdline.h"
#include "tsm_util.h"

struct fault {
	const char *name;
	int tsm_errno;		/* what reading the outblob fails with */
	int wipes;		/* the VMPCK is wiped after it */
};

static const struct fault faults[] = {
	{ "wrong-seqno",	EBADMSG,	1 },
	{ "bad-tag",		EBADMSG,	1 },
	{ "no-response",	EBADMSG,	1 },
	{ "oversize-report",	EIO,		0 },
	{ "bad-status",		ENXIO,		0 },
};

/* What x-fault=oversize-report and bad-status put in MSG_REPORT_RSP */
#define FAULT_REPORT_SIZE	(0x1000 + SNP_REPORT_SIZE)
#define FAULT_STATUS		0xbad0

static int get_report(int fd, int vmpl, struct snp_report_resp *resp)
{
	struct snp_report_req req = { .vmpl = vmpl };
	struct snp_guest_request_ioctl io = {
		.msg_version = 1,
		.req_data = (uintptr_t)&req,
		.resp_data = (uintptr_t)resp,
	};

	memset(resp, 0, sizeof(*resp));
	return ioctl(fd, SNP_GET_REPORT, &io) ? errno : 0;
}

TEST(hostile_response)
{
	uint8_t nonce[TSM_INBLOB_MAX] = { 0x5a }, report[SNP_REPORT_SIZE];
	const struct fault *f = NULL;
	struct snp_report_resp resp;
	char mode[32], item[64];
	int fd, vmpl, err;
	unsigned int i;
	ssize_t n;

	if (!cmdline_value("snp_fault", mode, sizeof(mode)))
		SKIP(return, "no snp_fault= on the command line: the host injects no fault");
	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		if (!strcmp(mode, faults[i].name))
			f = &faults[i];
	ASSERT_NE(NULL, f) TH_LOG("unknown snp_fault=%s", mode);
	fd = open("/dev/sev-guest", O_RDWR);
	ASSERT_LE(0, fd) TH_LOG("/dev/sev-guest: %s", strerror(errno));
	vmpl = sev_vmpck_id();
	ASSERT_LE(0, vmpl);

	/* The attestation path an agent takes: configfs-tsm */
	snprintf(item, sizeof(item), "h%d", getpid());
	ASSERT_EQ(0, tsm_mkdir(item));
	ASSERT_EQ(0, tsm_write(item, "inblob", nonce, sizeof(nonce)));
	n = tsm_read(item, "outblob", report, sizeof(report));
	EXPECT_EQ(-f->tsm_errno, n) TH_LOG("%s: outblob read gave %zd (%s), want -%s", mode, n,
					    n < 0 ? strerror(-n) : "data", strerror(f->tsm_errno));
	EXPECT_EQ(0, tsm_rmdir(item));

	/* Is the key still there?  The ioctl passes the response on as it came. */
	err = get_report(fd, vmpl, &resp);
	if (f->wipes) {
		EXPECT_EQ(ENOTTY, err) TH_LOG("%s: the VMPCK was not wiped (%s)", mode,
					      err ? strerror(err) : "the request worked");
	} else {
		struct snp_msg_report_resp_hdr {
			uint32_t status;
			uint32_t report_size;
		} hdr;

		ASSERT_EQ(0, err) TH_LOG("%s: the VMPCK is gone: %s", mode, strerror(err));
		memcpy(&hdr, resp.data, sizeof(hdr));
		if (!strcmp(mode, "oversize-report")) {
			EXPECT_EQ(FAULT_REPORT_SIZE, hdr.report_size);
		} else {
			EXPECT_EQ(FAULT_STATUS, hdr.status);
		}
		/* and configfs-tsm still refuses it, the same way */
		snprintf(item, sizeof(item), "i%d", getpid());
		ASSERT_EQ(0, tsm_mkdir(item));
		ASSERT_EQ(0, tsm_write(item, "inblob", nonce, sizeof(nonce)));
		EXPECT_EQ(-f->tsm_errno, tsm_read(item, "outblob", report, sizeof(report)));
		EXPECT_EQ(0, tsm_rmdir(item));
	}
	close(fd);
}

TEST_HARNESS_MAIN

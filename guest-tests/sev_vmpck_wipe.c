// SPDX-License-Identifier: GPL-2.0
/*
 * sev_vmpck_wipe - when the PSP refuses a message, sev-guest must stop using the VMPCK
 * (the sequence number is the AES-GCM IV: retrying with a new one would be refused, and
 * re-using the old one would reuse an IV).  The responder's FAIL_NEXT register makes the
 * next request fail as an authentication failure; after it, every request, ioctl or
 * configfs, fails with ENOTTY, and binding the test transport again does not bring the
 * key back.
 *
 * Destructive for the rest of the boot: run it last.
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
#include "tsm_util.h"

TEST(psp_error_wipes_the_vmpck)
{
	struct snp_report_req req = { .vmpl = 0 };
	struct snp_report_resp resp;
	struct snp_guest_request_ioctl io = {
		.msg_version = 1,
		.req_data = (uintptr_t)&req,
		.resp_data = (uintptr_t)&resp,
	};
	uint8_t nonce[TSM_INBLOB_MAX] = { 1 }, report[SNP_REPORT_SIZE];
	volatile uint8_t *regs;
	char item[64];
	int fd, vmpck = sev_vmpck_id();

	fd = open("/dev/sev-guest", O_RDWR);
	if (fd < 0 && errno == ENOENT)
		SKIP(return, "no /dev/sev-guest: this guest has no sev-snp-responder device");
	ASSERT_LE(0, fd);
	ASSERT_LE(0, vmpck);
	req.vmpl = vmpck;
	regs = responder_map();
	ASSERT_NE(NULL, regs);

	ASSERT_EQ(0, ioctl(fd, SNP_GET_REPORT, &io)) TH_LOG("before: %s", strerror(errno));
	*(volatile uint32_t *)(regs + RESP_REG_FAIL_NEXT) = 1;
	io.exitinfo2 = 0;
	EXPECT_EQ(-1, ioctl(fd, SNP_GET_REPORT, &io));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(0x27, io.fw_error) TH_LOG("exitinfo2 0x%llx", (unsigned long long)io.exitinfo2);
	/* The responder would answer now; the guest must no longer ask. */
	EXPECT_EQ(-1, ioctl(fd, SNP_GET_REPORT, &io));
	EXPECT_EQ(ENOTTY, errno);

	snprintf(item, sizeof(item), "w%d", getpid());
	ASSERT_EQ(0, tsm_mkdir(item));
	ASSERT_EQ(0, tsm_write(item, "inblob", nonce, sizeof(nonce)));
	EXPECT_EQ(-ENOTTY, tsm_read(item, "outblob", report, sizeof(report)));
	EXPECT_EQ(0, tsm_rmdir(item));
	close(fd);
}

/*
 * Binding the test transport again does not bring the wiped key back: sev-guest wiped it
 * in the device's secrets page, which only a reset of the device rebuilds, so it refuses
 * the device it is handed after the bind (an empty VMPCK), and there is no provider.
 */
TEST(wiped_vmpck_stays_wiped_after_a_rebind)
{
	char bdf[64], item[64];

	if (access("/dev/sev-guest", F_OK))
		SKIP(return, "no /dev/sev-guest: no sev-snp-responder device, or no VMPCK");
	ASSERT_EQ(0, transport_device(bdf, sizeof(bdf)));
	if (access(TRANSPORT_DRIVER "/unbind", W_OK))
		SKIP(return, "the test transport cannot be unbound in this kernel (%s)",
		     strerror(errno));
	ASSERT_EQ(0, transport_bind("unbind", bdf));
	ASSERT_EQ(0, transport_bind("bind", bdf));
	EXPECT_EQ(-1, access("/dev/sev-guest", F_OK));
	snprintf(item, sizeof(item), "r%d", getpid());
	EXPECT_EQ(ENXIO, tsm_mkdir(item));
}

TEST_HARNESS_MAIN

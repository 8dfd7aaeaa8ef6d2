// SPDX-License-Identifier: GPL-2.0
/*
 * tsm_no_provider - configfs-tsm with no TSM registered: the report group exists, and
 * mkdir of a report item fails with ENXIO (Documentation/ABI/testing/configfs-tsm).
 * Runs in a guest without the sev-snp-responder device; where a provider is registered
 * it skips and says so (tsm_report covers that guest).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "tsm_util.h"

TEST(mkdir_without_a_provider_is_enxio)
{
	struct stat st;
	char item[64];
	int err;

	ASSERT_EQ(0, stat(TSM_REPORT_DIR, &st)) TH_LOG("%s: %s (CONFIG_TSM_REPORTS, configfs "
		"mounted?)", TSM_REPORT_DIR, strerror(errno));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	if (access("/dev/sev-guest", F_OK) == 0)
		SKIP(return, "sev-guest is registered in this guest (sev-snp-responder present)");
	snprintf(item, sizeof(item), "np%d", getpid());
	err = tsm_mkdir(item);
	if (!err)
		tsm_rmdir(item);
	EXPECT_EQ(ENXIO, err) TH_LOG("mkdir: %s", strerror(err));
}

TEST_HARNESS_MAIN

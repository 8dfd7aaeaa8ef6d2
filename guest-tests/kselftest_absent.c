// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest_absent - stands in for a kernel selftest that the row's tree does not have,
 * so that the guest suite reports a skip with the reason, never a pass.  The Makefile
 * names the test (TEST) and says why it is absent (REASON).
 */
#include <stdio.h>

int main(void)
{
	printf("TAP version 13\n1..1\nok 1 %s # SKIP %s\n", TEST, REASON);
	return 0;
}

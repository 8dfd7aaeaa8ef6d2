// SPDX-License-Identifier: GPL-2.0
/*
 * rand_arc4random.c - a consumer of the user-space clone suite: glibc's
 * arc4random_buf(16) (2.36: getrandom; 2.41: the vDSO) in a loop, each output recorded
 * in the ring (us_consumer.h).  Linked against the guest's own library.
 */
#include <stdlib.h>

#include "us_consumer.h"

int main(void)
{
	struct us_out o = us_open(0, "glibc-arc4random", 16);
	unsigned char b[16];

	for (;;) {
		arc4random_buf(b, sizeof(b));
		us_put(&o, b, sizeof(b));
	}
}

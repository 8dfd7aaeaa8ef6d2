// SPDX-License-Identifier: GPL-2.0
/*
 * rand_getrandom.c - a consumer of the user-space clone suite: glibc's getrandom(16) in
 * a loop, each output recorded in the ring (us_consumer.h).  Linked against the guest's
 * own library.
 */
#include <sys/random.h>

#include "us_consumer.h"

int main(void)
{
	struct us_out o = us_open(0, "glibc-getrandom", 16);
	unsigned char b[16];

	for (;;) {
		if (getrandom(b, sizeof(b), 0) != sizeof(b))
			us_die("getrandom");
		us_put(&o, b, sizeof(b));
	}
}

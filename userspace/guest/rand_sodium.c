// SPDX-License-Identifier: GPL-2.0
/*
 * rand_sodium.c - a consumer of the user-space clone suite: libsodium's
 * randombytes_buf(16) in a loop, each output recorded in the ring (us_consumer.h).
 * Linked against the guest's own library.
 */
#include <sodium.h>

#include "us_consumer.h"

int main(void)
{
	struct us_out o = us_open(0, "sodium-randombytes", 16);
	unsigned char b[16];

	if (sodium_init() < 0)
		us_die("sodium_init");
	for (;;) {
		randombytes_buf(b, sizeof(b));
		us_put(&o, b, sizeof(b));
	}
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rand_openssl.c - a consumer of the user-space clone suite: OpenSSL's RAND_bytes(16)
 * (the default DRBG chain) in a loop, each output recorded in the ring (us_consumer.h).
 * Linked against the guest's own library; argv[1], if given, labels the slot (the
 * same program runs with and without the EPOCH-DRBG provider).
 */
#include <openssl/rand.h>

#include "us_consumer.h"

int main(int argc, char **argv)
{
	struct us_out o = us_open(0, argc > 1 ? argv[1] : "openssl-RAND_bytes", 16);
	unsigned char b[16];

	for (;;) {
		if (RAND_bytes(b, sizeof(b)) != 1)
			us_die("RAND_bytes");
		us_put(&o, b, sizeof(b));
	}
}

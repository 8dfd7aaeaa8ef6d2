// SPDX-License-Identifier: GPL-2.0
/*
 * rand_gnutls.c - a consumer of the user-space clone suite: GnuTLS's
 * gnutls_rnd(GNUTLS_RND_RANDOM, 16) in a loop, each output recorded in the ring
 * (us_consumer.h).  Linked against the guest's own library.
 */
#include <gnutls/crypto.h>

#include "us_consumer.h"

int main(void)
{
	struct us_out o = us_open(0, "gnutls-rnd", 16);
	unsigned char b[16];

	for (;;) {
		if (gnutls_rnd(GNUTLS_RND_RANDOM, b, sizeof(b)))
			us_die("gnutls_rnd");
		us_put(&o, b, sizeof(b));
	}
}

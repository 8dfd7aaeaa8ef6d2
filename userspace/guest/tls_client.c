// SPDX-License-Identifier: GPL-2.0
/*
 * tls_client.c - a consumer of the user-space clone suite: TLS 1.3 handshakes in a loop
 * against the guest's unmodified 'openssl s_server' on 127.0.0.1:PORT, recording what the
 * server drew for each: its ServerHello random (RAND_bytes) and its X25519 key share
 * (RAND_priv_bytes), each in a slot of its own.  Only the hellos matter: the server's
 * self-signed certificate is not verified.
 */
#include <openssl/evp.h>

#include "tls_connect.h"

/* Usage: tls_client PORT LABEL: slots LABEL-random and LABEL-keyshare (the server's) */
int main(int argc, char **argv)
{
	int port = tls_port(argc, argv), fd;
	unsigned char r[32], k[32];
	struct us_out random, share;
	char name[64];
	EVP_PKEY *key;
	SSL_CTX *ctx;
	size_t len;
	SSL *ssl;

	snprintf(name, sizeof(name), "%s-random", argv[2]);
	random = us_open(0, name, 32);
	snprintf(name, sizeof(name), "%s-keyshare", argv[2]);
	share = us_open(1, name, 32);
	ctx = tls_context();
	if (!SSL_CTX_set1_groups_list(ctx, "X25519"))
		us_die("SSL_CTX_set1_groups_list");
	for (;;) {
		ssl = tls_connect(ctx, port, &fd);
		if (!ssl)
			continue;
		if (SSL_get_server_random(ssl, r, sizeof(r)) == sizeof(r) &&
		    SSL_get_peer_tmp_key(ssl, &key)) {
			len = sizeof(k);
			if (EVP_PKEY_get_raw_public_key(key, k, &len) && len == sizeof(k))
				us_put(&share, k, len);
			EVP_PKEY_free(key);
			us_put(&random, r, sizeof(r));
			SSL_shutdown(ssl);
		}
		SSL_free(ssl);
		close(fd);
		tls_pause();
	}
}

// SPDX-License-Identifier: GPL-2.0
/*
 * tls_client.c - a consumer of the user-space clone suite: TLS 1.3 handshakes in a loop
 * against the guest's unmodified 'openssl s_server' on 127.0.0.1:4433, recording what the
 * server drew for each: its ServerHello random (RAND_bytes) and its X25519 key share
 * (RAND_priv_bytes), each in a slot of its own.  Only the hellos matter: the server's
 * self-signed certificate is not verified.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "us_consumer.h"

/* Usage: tls_client PORT LABEL: slots LABEL-random and LABEL-keyshare (the server's) */
int main(int argc, char **argv)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	unsigned char r[32], k[32];
	struct us_out random, share;
	char name[64];
	EVP_PKEY *key;
	SSL_CTX *ctx;
	size_t len;
	SSL *ssl;
	int fd;

	if (argc != 3 || atoi(argv[1]) <= 0 || atoi(argv[1]) > 65535) {
		fprintf(stderr, "usage: %s PORT LABEL\n", argv[0]);
		return 2;
	}
	addr.sin_port = htons(atoi(argv[1]));
	snprintf(name, sizeof(name), "%s-random", argv[2]);
	random = us_open(0, name, 32);
	snprintf(name, sizeof(name), "%s-keyshare", argv[2]);
	share = us_open(1, name, 32);
	ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set1_groups_list(ctx, "X25519"))
		us_die("SSL_CTX");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			us_die("socket");
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
			/* the server is not listening yet */
			close(fd);
			usleep(100000);
			continue;
		}
		ssl = SSL_new(ctx);
		if (!ssl || !SSL_set_fd(ssl, fd))
			us_die("SSL_new");
		if (SSL_connect(ssl) == 1 &&
		    SSL_get_server_random(ssl, r, sizeof(r)) == sizeof(r) &&
		    SSL_get_peer_tmp_key(ssl, &key)) {
			len = sizeof(k);
			if (EVP_PKEY_get_raw_public_key(key, k, &len) && len == sizeof(k))
				us_put(&share, k, len);
			EVP_PKEY_free(key);
			us_put(&random, r, sizeof(r));
			SSL_shutdown(ssl);
		} else {
			ERR_print_errors_fp(stderr);
			usleep(100000);
		}
		SSL_free(ssl);
		close(fd);
	}
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tls_connect.h - what the suite's TLS clients (tls_client.c, tls_tickets.c) share: a
 * TLS 1.3 context that does not verify (only the server's hellos and tickets matter),
 * and one connection to the guest's server on 127.0.0.1:PORT, retried until it listens.
 */
#ifndef TLS_CONNECT_H
#define TLS_CONNECT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "us_consumer.h"

static SSL_CTX *tls_context(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION))
		us_die("SSL_CTX");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	return ctx;
}

/*
 * A connection whose handshake completed, its socket in *fd; NULL after a failed
 * handshake (errors cleared, a pause taken).  Waits while the server is not listening
 * (yet, or again after a restart).
 */
static SSL *tls_connect(SSL_CTX *ctx, int port, int *fd)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	SSL *ssl;

	for (;;) {
		*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (*fd < 0)
			us_die("socket");
		if (!connect(*fd, (struct sockaddr *)&addr, sizeof(addr)))
			break;
		close(*fd);
		usleep(100000);
	}
	ssl = SSL_new(ctx);
	if (!ssl || !SSL_set_fd(ssl, *fd))
		us_die("SSL_new");
	if (SSL_connect(ssl) == 1)
		return ssl;
	ERR_clear_error();
	SSL_free(ssl);
	close(*fd);
	usleep(100000);
	return NULL;
}

/*
 * After each connection: the other consumers pause after each batch of outputs
 * (us_consumer.h), and a handshake costs the client and the server about 40 ms of CPU
 * under TCG.  Without a pause the three TLS loops kept most of a vCPU busy, and the
 * guest's programs (a JVM starting) waited for it.
 */
#define TLS_PAUSE_US	100000

static void tls_pause(void)
{
	usleep(TLS_PAUSE_US);
}

static int tls_port(int argc, char **argv)
{
	int port = argc == 3 ? atoi(argv[1]) : 0;

	if (port <= 0 || port > 65535) {
		fprintf(stderr, "usage: %s PORT LABEL\n", argv[0]);
		exit(2);
	}
	return port;
}

#endif /* TLS_CONNECT_H */

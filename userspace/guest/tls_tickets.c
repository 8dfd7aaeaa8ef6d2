// SPDX-License-Identifier: GPL-2.0
/*
 * tls_tickets.c - a consumer of the user-space clone suite: TLS 1.3 connections in a loop
 * to an unmodified 'openssl s_server -www' on 127.0.0.1:PORT, recording the key name of
 * each session ticket the server issues (the first 16 bytes of an OpenSSL ticket name
 * the key that encrypts it).  Two clones whose tickets carry the same key name accept
 * each other's tickets: a ticket taken from one resumes its session on the other.  The
 * suite's reseed-notify hook restarts that server when the RNG epoch moved, and a new
 * server process draws new ticket keys.
 *
 * Usage: tls_tickets PORT LABEL: slot LABEL-ticket-key
 */
#include "tls_connect.h"

static const char request[] = "GET / HTTP/1.0\r\n\r\n";

int main(int argc, char **argv)
{
	int port = tls_port(argc, argv), fd;
	const unsigned char *ticket;
	char name[24], buf[4096];
	struct us_out keys;
	SSL_SESSION *sess;
	SSL_CTX *ctx;
	size_t len;
	SSL *ssl;

	snprintf(name, sizeof(name), "%s-ticket-key", argv[2]);
	keys = us_open(0, name, 16);
	ctx = tls_context();
	for (;;) {
		ssl = tls_connect(ctx, port, &fd);
		if (!ssl)
			continue;
		/* the tickets come after the handshake: read the reply to the end */
		if (SSL_write(ssl, request, sizeof(request) - 1) == sizeof(request) - 1) {
			while (SSL_read(ssl, buf, sizeof(buf)) > 0)
				;
			sess = SSL_get1_session(ssl);
			if (sess) {
				SSL_SESSION_get0_ticket(sess, &ticket, &len);
				if (len >= 16)
					us_put(&keys, ticket, 16);
				SSL_SESSION_free(sess);
			}
		}
		ERR_clear_error();
		SSL_free(ssl);
		close(fd);
		tls_pause();
	}
}

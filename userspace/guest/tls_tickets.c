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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "us_consumer.h"

static const char request[] = "GET / HTTP/1.0\r\n\r\n";

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	const unsigned char *ticket;
	struct us_out keys;
	SSL_SESSION *sess;
	char name[24], buf[4096];
	SSL_CTX *ctx;
	size_t len;
	SSL *ssl;
	int fd;

	if (argc != 3 || atoi(argv[1]) <= 0 || atoi(argv[1]) > 65535) {
		fprintf(stderr, "usage: %s PORT LABEL\n", argv[0]);
		return 2;
	}
	addr.sin_port = htons(atoi(argv[1]));
	snprintf(name, sizeof(name), "%s-ticket-key", argv[2]);
	keys = us_open(0, name, 16);
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION))
		us_die("SSL_CTX");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			us_die("socket");
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
			/* the server is not listening (yet, or again after a restart) */
			close(fd);
			usleep(100000);
			continue;
		}
		ssl = SSL_new(ctx);
		if (!ssl || !SSL_set_fd(ssl, fd))
			us_die("SSL_new");
		/* the tickets come after the handshake: read the reply to the end */
		if (SSL_connect(ssl) == 1 &&
		    SSL_write(ssl, request, sizeof(request) - 1) == sizeof(request) - 1) {
			while (SSL_read(ssl, buf, sizeof(buf)) > 0)
				;
			sess = SSL_get1_session(ssl);
			if (sess) {
				SSL_SESSION_get0_ticket(sess, &ticket, &len);
				if (len >= 16)
					us_put(&keys, ticket, 16);
				SSL_SESSION_free(sess);
			}
		} else {
			ERR_clear_error();
			usleep(100000);
		}
		SSL_free(ssl);
		close(fd);
	}
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cmdline.h - read KEY=VALUE from the guest's kernel command line, as the host harness
 * passes parameters to guest programs (scenario=, snp_nonce=).
 */
#ifndef RESEED_CMDLINE_H
#define RESEED_CMDLINE_H

#include <stdio.h>
#include <string.h>

/* The value of KEY=VALUE in /proc/cmdline, copied to buf; NULL when absent. */
static inline const char *cmdline_value(const char *key, char *buf, size_t len)
{
	FILE *f = fopen("/proc/cmdline", "r");
	char line[4096], *tok, *save;
	size_t klen = strlen(key);

	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return NULL;
	}
	fclose(f);
	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		if (!strncmp(tok, key, klen) && tok[klen] == '=') {
			snprintf(buf, len, "%s", tok + klen + 1);
			return buf;
		}
	}
	return NULL;
}

#endif /* RESEED_CMDLINE_H */

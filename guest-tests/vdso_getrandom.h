/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vdso_getrandom.h - getrandom() straight from the vDSO, as glibc 2.41 calls it.
 *
 * Since Linux 6.11 the vDSO exports __vdso_getrandom(buf, len, flags, state, state_len):
 * a ChaCha20 generator whose key lives in @state, user memory that the caller allocates
 * with the protection and flags the vDSO asks for (MAP_DROPPABLE), and that rekeys through
 * the getrandom syscall when the generation in the vDSO data page moved. The symbol is
 * resolved the way tools/testing/selftests/vDSO/vdso_test_getrandom.c does it, with the
 * selftests' parse_vdso.c from the row's kernel tree, which the Makefile links in.
 *
 * One state: the programs that use this header call it from one thread.
 */
#ifndef VDSO_GETRANDOM_H
#define VDSO_GETRANDOM_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include "vDSO/parse_vdso.h"

/*
 * The layout of struct vgetrandom_opaque_params (include/uapi/linux/random.h, 6.11),
 * spelled here so that the programs also build against the 6.1 row's headers, where
 * they then report that the vDSO has no getrandom().
 */
struct vdso_getrandom_params {
	uint32_t size_of_opaque_state;
	uint32_t mmap_prot;
	uint32_t mmap_flags;
	uint32_t reserved[13];
};

struct vdso_getrandom {
	ssize_t (*fn)(void *buf, size_t len, unsigned int flags, void *state, size_t state_len);
	void *state;
	size_t state_len;
	char why[160];		/* why there is none, when vdso_getrandom_init() failed */
};

/* Find __vdso_getrandom and give it a state: 0, or -1 with @v->why saying why not. */
static inline int vdso_getrandom_init(struct vdso_getrandom *v)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct vdso_getrandom_params params;
	ssize_t ret;

	memset(v, 0, sizeof(*v));
	if (!base) {
		snprintf(v->why, sizeof(v->why), "the process has no vDSO (no AT_SYSINFO_EHDR)");
		return -1;
	}
	vdso_init_from_sysinfo_ehdr(base);
	v->fn = vdso_sym("LINUX_2.6", "__vdso_getrandom");
	if (!v->fn) {
		snprintf(v->why, sizeof(v->why), "the vDSO has no __vdso_getrandom "
			 "(Linux before 6.11, or built without CONFIG_VDSO_GETRANDOM)");
		return -1;
	}
	memset(&params, 0, sizeof(params));
	ret = v->fn(NULL, 0, 0, &params, ~0UL);
	if (ret) {
		snprintf(v->why, sizeof(v->why), "__vdso_getrandom refused the parameters query: %s",
			 strerror(ret < 0 ? -ret : EINVAL));
		v->fn = NULL;
		return -1;
	}
	/* One state, alone in its mapping: a state must not straddle a page. */
	v->state = mmap(NULL, getpagesize(), params.mmap_prot, params.mmap_flags, -1, 0);
	if (v->state == MAP_FAILED || params.size_of_opaque_state > (size_t)getpagesize()) {
		snprintf(v->why, sizeof(v->why), "no memory for the vDSO state (%u bytes, flags %#x): %s",
			 params.size_of_opaque_state, params.mmap_flags, strerror(errno));
		v->fn = NULL;
		return -1;
	}
	v->state_len = params.size_of_opaque_state;
	return 0;
}

static inline ssize_t vdso_getrandom(struct vdso_getrandom *v, void *buf, size_t len)
{
	return v->fn(buf, len, 0, v->state, v->state_len);
}

#endif /* VDSO_GETRANDOM_H */

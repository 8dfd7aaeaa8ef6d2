/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rng_uapi.h - glibc's <sys/random.h> and the kernel's <linux/random.h> side by side.
 *
 * Both define GRND_*, with the same values spelled differently; the guest tests need
 * getrandom() from glibc and RNDEPOCH / struct rand_epoch_data from our patched uapi.
 */
#ifndef RNG_UAPI_H
#define RNG_UAPI_H

#include <sys/random.h>
#undef GRND_NONBLOCK
#undef GRND_RANDOM
#undef GRND_INSECURE
#include <linux/random.h>

#endif /* RNG_UAPI_H */

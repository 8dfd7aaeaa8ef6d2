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

/*
 * struct rand_epoch_data.vm_counter_offset, in 32-bit words from the page's start
 * (byte 256, off the cache lines that a device writes): 0 on kernels without the VM
 * counter, which map one page.
 */
#define EPOCH_VM_COUNTER_OFFSET_WORD	64

#endif /* RNG_UAPI_H */

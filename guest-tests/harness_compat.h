/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kselftest harnesses of the rows' kernels, for the guest
 * tests that build against either (include after kselftest_harness.h).
 *
 * A setup that called SKIP(): the 6.1 harness sets _metadata->skip and still runs the
 * test body and the teardown; the 6.12 one (since 6.9, which added XFAIL_ADD) records
 * KSFT_SKIP in _metadata->exit_code instead.
 */
#ifndef RESEED_HARNESS_COMPAT_H
#define RESEED_HARNESS_COMPAT_H

#ifdef XFAIL_ADD
#define HARNESS_SKIPPED(m)	((m)->exit_code == KSFT_SKIP)
#else
#define HARNESS_SKIPPED(m)	((m)->skip)
#endif

#define RETURN_IF_SKIPPED()	do { if (HARNESS_SKIPPED(_metadata)) return; } while (0)

#endif

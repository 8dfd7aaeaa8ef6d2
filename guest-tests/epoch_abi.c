// SPDX-License-Identifier: GPL-2.0
/*
 * epoch_abi - the user ABI of the RNG epoch: ioctl(RNDEPOCH) on /dev/random and
 * /dev/urandom, the "rand:epoch" descriptor and its read-only one-page mapping.
 *
 * The epoch exists only while a notifier is registered; in this guest that is the
 * virtio-rng driver, and only when QEMU's device offers VIRTIO_RNG_F_LEAK.  The test reads
 * the negotiated features from sysfs and holds the kernel to the matching promise: with the
 * feature RNDEPOCH must work, without it RNDEPOCH must fail with ENOTTY (and every other case
 * is skipped, saying why).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmdline.h"
#include "rng_uapi.h"
#include "kselftest_harness.h"

#define VIRTIO_ID_RNG		4
#define VIRTIO_RNG_F_LEAK	0
#define VIRTIO_F_ACCESS_PLATFORM 33

/* Feature bit @bit of the first virtio-rng device in sysfs: 1, 0, or -1 with no device. */
static int virtio_rng_feature(int bit, char *name, size_t len)
{
	char path[PATH_MAX], buf[128];
	struct dirent *d;
	int found = -1;
	DIR *dir;
	FILE *f;

	dir = opendir("/sys/bus/virtio/devices");
	if (!dir)
		return -1;
	while (found < 0 && (d = readdir(dir))) {
		unsigned int id;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/device", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%x", &id) != 1)
			id = 0;
		fclose(f);
		if (id != VIRTIO_ID_RNG)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/features", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (int)strlen(buf) > bit)
			found = buf[bit] == '1';
		fclose(f);
		if (name)
			snprintf(name, len, "%s", d->d_name);
	}
	closedir(dir);
	return found;
}

static int rndepoch(const char *dev)
{
	int fd = open(dev, O_RDONLY), ret, saved;

	if (fd < 0)
		return -1;
	ret = ioctl(fd, RNDEPOCH);
	saved = errno;
	close(fd);
	errno = saved;
	return ret;
}

/*
 * The epoch descriptor, or a SKIP that says why there is none.  A kernel that has the
 * feature but refuses is a failure, not a skip.
 */
#define EPOCH_FD_OR_SKIP(fd) do {							\
	int feature_ = virtio_rng_feature(VIRTIO_RNG_F_LEAK, NULL, 0);			\
											\
	(fd) = rndepoch("/dev/urandom");						\
	if ((fd) < 0 && errno == ENOTTY && feature_ != 1)				\
		SKIP(return, "no epoch notifier: %s",					\
		     feature_ < 0 ? "no virtio-rng device" :				\
		     "QEMU's virtio-rng lacks VIRTIO_RNG_F_LEAK");			\
	ASSERT_LE(0, (fd)) TH_LOG("RNDEPOCH: %s", strerror(errno));			\
} while (0)

static const volatile uint32_t *map_epoch(int fd, int prot, int flags)
{
	void *p = mmap(NULL, getpagesize(), prot, flags, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Physical frame of the page mapped at @p (root only; 0 if unknown). */
static uint64_t pfn_of(const volatile void *p)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	(void)*(const volatile uint32_t *)p;	/* fault it in */
	if (pread(fd, &entry, sizeof(entry), (uintptr_t)p / getpagesize() * sizeof(entry)) !=
	    sizeof(entry))
		entry = 0;
	close(fd);
	return (entry & (1ULL << 63)) ? entry & ((1ULL << 55) - 1) : 0;
}

/* Whether a line of the kernel log contains @text (root: /dev/kmsg); -1 if unreadable. */
static int kernel_log_has(const char *text)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK), found = 0;
	char rec[2048];
	ssize_t n;

	if (fd < 0)
		return -1;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)	/* overwritten records: go on */
			continue;
		if (n <= 0)
			break;
		rec[n] = 0;
		if (strstr(rec, text))
			found = 1;
	}
	close(fd);
	return found;
}

/*
 * Issue 14 item 2: through bounce buffers the device would write a bounce slot, and the
 * epoch page would change at the driver's unmap, after vCPUs ran.  So with
 * VIRTIO_F_ACCESS_PLATFORM and swiotlb=force the driver refuses VIRTIO_RNG_F_LEAK (and
 * says so), and RNDEPOCH has no notifier; with direct DMA it keeps the feature.
 */
TEST(leak_feature_refused_when_dma_is_bounced)
{
	const char *refused = "VIRTIO_RNG_F_LEAK refused";
	int access_platform = virtio_rng_feature(VIRTIO_F_ACCESS_PLATFORM, NULL, 0);
	int leak = virtio_rng_feature(VIRTIO_RNG_F_LEAK, NULL, 0);
	int said = kernel_log_has(refused);
	char buf[32];
	int fd;

	if (access_platform < 0)
		SKIP(return, "no virtio-rng device");
	if (said < 0)
		SKIP(return, "cannot read /dev/kmsg: %s", strerror(errno));
	if (access_platform != 1 || !cmdline_value("swiotlb", buf, sizeof(buf)) ||
	    strcmp(buf, "force")) {
		EXPECT_EQ(0, said) TH_LOG("the driver refused the leak feature with direct DMA");
		return;
	}
	ASSERT_EQ(1, said) TH_LOG("bounced DMA (VIRTIO_F_ACCESS_PLATFORM, swiotlb=force) and "
				  "no \"%s\" in the kernel log: was the feature offered?",
				  refused);
	EXPECT_EQ(0, leak) TH_LOG("VIRTIO_RNG_F_LEAK negotiated through bounce buffers");
	fd = rndepoch("/dev/urandom");
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENOTTY, errno);
	if (fd >= 0)
		close(fd);
}

/* RNDEPOCH works exactly when the device offers the leak feature; otherwise ENOTTY. */
/*
 * Whether /dev/vmclock0 offers VMClock's vm_generation_counter: flags (a u64 at offset
 * 24 of the page) bit 8, VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT.  0 without the device.
 */
static int vmclock_has_vm_counter(void)
{
	uint64_t flags = 0;
	int fd = open("/dev/vmclock0", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &flags, sizeof(flags), 24) != sizeof(flags))
		flags = 0;
	close(fd);
	return !!(flags & (1 << 8));
}

TEST(rndepoch_matches_leak_feature)
{
	int feature = virtio_rng_feature(VIRTIO_RNG_F_LEAK, NULL, 0);
	int fd = rndepoch("/dev/urandom"), err = errno;
	int vm_counter = vmclock_has_vm_counter();

	errno = err;
	if (feature == 1 || vm_counter) {
		ASSERT_LE(0, fd) TH_LOG("%s, RNDEPOCH: %s", feature == 1 ?
					"VIRTIO_RNG_F_LEAK negotiated" :
					"VMClock's VM generation counter", strerror(errno));
		close(fd);
		return;
	}
	ASSERT_EQ(-1, fd) TH_LOG("RNDEPOCH gave fd %d without any epoch notifier", fd);
	ASSERT_EQ(ENOTTY, errno) TH_LOG("RNDEPOCH without a notifier: %s, want ENOTTY",
					strerror(errno));
	TH_LOG("%s: RNDEPOCH fails with ENOTTY, as it must without a notifier",
	       feature < 0 ? "no virtio-rng device" : "QEMU's virtio-rng lacks VIRTIO_RNG_F_LEAK");
}

TEST(rndepoch_on_random_and_urandom)
{
	int fd, fd2;

	EPOCH_FD_OR_SKIP(fd);
	close(fd);
	fd = rndepoch("/dev/random");
	ASSERT_LE(0, fd) TH_LOG("RNDEPOCH on /dev/random: %s", strerror(errno));
	fd2 = rndepoch("/dev/random");
	ASSERT_LE(0, fd2);
	EXPECT_NE(fd, fd2);	/* a new descriptor each time */
	close(fd);
	close(fd2);
}

TEST(descriptor_is_rdonly_cloexec_rand_epoch)
{
	char path[64], target[128];
	ssize_t n;
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDONLY, fcntl(fd, F_GETFL) & O_ACCMODE);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	ASSERT_LT(0, n);
	target[n] = '\0';
	EXPECT_STREQ("anon_inode:rand:epoch", target);
	EXPECT_EQ(-1, write(fd, "x", 1));
	EXPECT_EQ(EBADF, errno);
	close(fd);
}

/* Any process may ask: no capability, no root. */
TEST(unprivileged_process_gets_and_maps_epoch)
{
	const volatile uint32_t *p;
	int fd, status;
	pid_t pid;

	EPOCH_FD_OR_SKIP(fd);
	p = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		const volatile uint32_t *q;
		int cfd;

		if (setgid(65534) || setuid(65534) || geteuid() != 65534)
			_exit(2);
		cfd = rndepoch("/dev/urandom");
		if (cfd < 0)
			_exit(3);
		q = map_epoch(cfd, PROT_READ, MAP_PRIVATE);
		if (!q)
			_exit(4);
		_exit(*q == *p ? 0 : 5);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child as nobody: 2 setuid, 3 RNDEPOCH, "
						 "4 mmap, 5 other value");
	munmap((void *)p, getpagesize());
	close(fd);
}

/*
 * One zeroed page: the value at offset 0, never written beyond it, but for the VM
 * counter's offset at byte 256 where the kernel has one: 264 (no_vm_counter, always
 * 0) while no hypervisor counter is registered, else a u64 in the second page.
 */
TEST(page_is_zero_beyond_the_value)
{
	const volatile unsigned char *b;
	const volatile uint32_t *p;
	int fd, i, nonzero = 0, pg = getpagesize();
	uint32_t off;

	EPOCH_FD_OR_SKIP(fd);
	p = map_epoch(fd, PROT_READ, MAP_PRIVATE);
	ASSERT_NE(NULL, p) TH_LOG("mmap: %s", strerror(errno));
	b = (const volatile unsigned char *)p;
	off = p[EPOCH_VM_COUNTER_OFFSET_WORD];
	TH_LOG("vm_counter_offset %u", off);
	if (off)
		EXPECT_TRUE(off == 264 || (off >= (uint32_t)pg && off <= 2u * pg - 8 && !(off % 8)))
			TH_LOG("vm_counter_offset %u", off);
	for (i = 4; i < pg; i++)
		nonzero += b[i] != 0 && (!off || i < 256 || i >= 260);
	EXPECT_EQ(0, nonzero);
	/* 0 (nobody wrote) or a notifier's value, whose counter is never 0. */
	if (*p)
		EXPECT_NE(0, *p & 0xffffff) TH_LOG("epoch 0x%08x", *p);
	TH_LOG("epoch 0x%08x", *p);
	munmap((void *)p, getpagesize());
	close(fd);
}

TEST(map_private_and_shared_read_only_see_the_same_page)
{
	const volatile uint32_t *priv, *shared, *small;
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	priv = map_epoch(fd, PROT_READ, MAP_PRIVATE);
	ASSERT_NE(NULL, priv) TH_LOG("MAP_PRIVATE: %s", strerror(errno));
	shared = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, shared) TH_LOG("MAP_SHARED: %s", strerror(errno));
	small = mmap(NULL, sizeof(struct rand_epoch_data), PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, small) TH_LOG("a length under one page: %s", strerror(errno));
	EXPECT_EQ(*priv, *shared);
	EXPECT_EQ(*priv, *small);
	if (pfn_of(priv)) {
		EXPECT_EQ(pfn_of(priv), pfn_of(shared));
		EXPECT_EQ(pfn_of(priv), pfn_of(small));
	}
	munmap((void *)priv, getpagesize());
	munmap((void *)shared, getpagesize());
	munmap((void *)small, getpagesize());
	close(fd);
}

TEST(map_writable_private_is_eperm)
{
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	EXPECT_EQ(NULL, map_epoch(fd, PROT_READ | PROT_WRITE, MAP_PRIVATE));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(NULL, map_epoch(fd, PROT_WRITE, MAP_PRIVATE));
	EXPECT_EQ(EPERM, errno);
	close(fd);
}

/* The descriptor is O_RDONLY, so the VFS refuses a writable shared mapping with EACCES. */
TEST(map_writable_shared_is_refused)
{
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	EXPECT_EQ(NULL, map_epoch(fd, PROT_READ | PROT_WRITE, MAP_SHARED));
	EXPECT_EQ(EACCES, errno);
	close(fd);
}

TEST(map_executable_is_eperm)
{
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	EXPECT_EQ(NULL, map_epoch(fd, PROT_READ | PROT_EXEC, MAP_PRIVATE));
	EXPECT_EQ(EPERM, errno);
	close(fd);
}

/*
 * A READ_IMPLIES_EXEC process (personality(), or an old binary without PT_GNU_STACK)
 * asks for PROT_READ and the kernel adds PROT_EXEC: it must still map the page, read-only
 * and not executable, as the ABI document says.
 */
TEST(read_implies_exec_process_maps_read_only)
{
	const volatile uint32_t *p;
	int fd, status;
	pid_t pid;

	EPOCH_FD_OR_SKIP(fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (personality(PER_LINUX | READ_IMPLIES_EXEC) < 0)
			_exit(2);
		p = map_epoch(fd, PROT_READ, MAP_SHARED);
		if (!p)
			_exit(errno == EPERM ? 3 : 4);
		(void)*p;
		/* Not executable: making it so fails, as for any other process. */
		_exit(mprotect((void *)p, getpagesize(), PROT_READ | PROT_EXEC) == -1 ? 0 : 5);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_NE(2, WEXITSTATUS(status)) TH_LOG("personality(READ_IMPLIES_EXEC) failed");
	EXPECT_NE(3, WEXITSTATUS(status)) TH_LOG("mmap(PROT_READ) is EPERM under READ_IMPLIES_EXEC");
	EXPECT_NE(4, WEXITSTATUS(status)) TH_LOG("mmap(PROT_READ) failed under READ_IMPLIES_EXEC");
	EXPECT_NE(5, WEXITSTATUS(status)) TH_LOG("the mapping could be made executable");
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

TEST(mprotect_writable_fails)
{
	const volatile uint32_t *p;
	int fd, flags[] = { MAP_PRIVATE, MAP_SHARED }, i;

	EPOCH_FD_OR_SKIP(fd);
	for (i = 0; i < 2; i++) {
		p = map_epoch(fd, PROT_READ, flags[i]);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(-1, mprotect((void *)p, getpagesize(), PROT_READ | PROT_WRITE))
			TH_LOG("%s mapping became writable", i ? "MAP_SHARED" : "MAP_PRIVATE");
		EXPECT_EQ(EACCES, errno);
		EXPECT_EQ(-1, mprotect((void *)p, getpagesize(), PROT_READ | PROT_EXEC));
		EXPECT_EQ(EACCES, errno);
		munmap((void *)p, getpagesize());
	}
	close(fd);
}

TEST(mremap_cannot_grow)
{
	const volatile uint32_t *p;
	void *q;
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	p = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, p);
	q = mremap((void *)p, getpagesize(), 2 * getpagesize(), MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(EFAULT, errno);
	q = mremap((void *)p, getpagesize(), 2 * getpagesize(), 0);
	EXPECT_EQ(MAP_FAILED, q);
	munmap((void *)p, getpagesize());
	close(fd);
}

TEST(map_at_offset_is_einval)
{
	void *p;
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	p = mmap(NULL, getpagesize(), PROT_READ, MAP_SHARED, fd, getpagesize());
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, getpagesize(), PROT_READ, MAP_PRIVATE, fd, getpagesize());
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	close(fd);
}

/* One page, or two where the kernel has the VM counter (vm_counter_offset != 0). */
TEST(map_longer_than_the_epoch_is_einval)
{
	const volatile uint32_t *e;
	long pages;
	void *p;
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	e = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, e);
	pages = e[EPOCH_VM_COUNTER_OFFSET_WORD] ? 2 : 1;
	munmap((void *)e, getpagesize());
	p = mmap(NULL, pages * getpagesize(), PROT_READ, MAP_SHARED, fd, 0);
	EXPECT_NE(MAP_FAILED, p) TH_LOG("%ld pages: %s", pages, strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, pages * getpagesize());
	p = mmap(NULL, (pages + 1) * getpagesize(), PROT_READ, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, pages * getpagesize() + 1, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	close(fd);
}

/* Whether reading *@p kills a child with SIGBUS. */
static int read_is_sigbus(const volatile uint64_t *p)
{
	int status;
	pid_t pid = fork();

	if (!pid)
		_exit(*p == 0x5a5a5a5a5a5a5a5aULL ? 3 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
}

/*
 * The VM generation counter (VMClock's vm_generation_counter): where the
 * kernel has one registered, the second page of a two-page mapping is the device's
 * page, read-only, shared and private alike, and the counter there is what
 * /dev/vmclock0 shows; where none is registered, the offset names the zero in the first
 * page, and the second page is not there (SIGBUS).
 */
TEST(vm_counter_in_the_second_page)
{
	const volatile uint64_t *ctr, *pctr;
	const volatile uint32_t *e;
	unsigned char *shared, *priv;
	uint64_t dev;
	int fd, vfd, pg = getpagesize();
	uint32_t off;

	EPOCH_FD_OR_SKIP(fd);
	e = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, e);
	off = e[EPOCH_VM_COUNTER_OFFSET_WORD];
	munmap((void *)e, pg);
	if (!off)
		SKIP(goto out, "this kernel maps no VM counter (a one-page epoch)");
	shared = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, 0);
	priv = mmap(NULL, 2 * pg, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, shared);
	ASSERT_NE(MAP_FAILED, priv);
	vfd = open("/dev/vmclock0", O_RDONLY);
	if (off < (uint32_t)pg) {
		EXPECT_EQ(264, off);
		EXPECT_EQ(0, *(const volatile uint64_t *)(shared + off));
		EXPECT_EQ(1, read_is_sigbus((const volatile uint64_t *)(shared + pg)))
			TH_LOG("the second page without a VM counter");
		TH_LOG("no VM counter registered (/dev/vmclock0 %s)",
		       vfd < 0 ? strerror(errno) : "present: no vm_generation_counter?");
		goto unmap;
	}
	ctr = (const volatile uint64_t *)(shared + off);
	pctr = (const volatile uint64_t *)(priv + off);
	EXPECT_EQ(*ctr, *pctr);
	EXPECT_EQ(-1, mprotect(shared + pg, pg, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	if (vfd >= 0) {
		ASSERT_EQ(sizeof(dev), pread(vfd, &dev, sizeof(dev), off - pg));
		EXPECT_EQ(dev, *ctr) TH_LOG("/dev/vmclock0 %" PRIu64 ", epoch %" PRIu64,
					    dev, *ctr);
	}
	TH_LOG("VM counter %" PRIu64 " at offset %u", *ctr, off);
unmap:
	if (vfd >= 0)
		close(vfd);
	munmap(shared, 2 * pg);
	munmap(priv, 2 * pg);
out:
	close(fd);
}

/* The page is the live epoch, not a copy: it comes back after MADV_DONTNEED. */
TEST(page_survives_madv_dontneed)
{
	const volatile uint32_t *p, *ref;
	uint64_t pfn;
	int fd;

	EPOCH_FD_OR_SKIP(fd);
	ref = map_epoch(fd, PROT_READ, MAP_SHARED);
	p = map_epoch(fd, PROT_READ, MAP_PRIVATE);
	ASSERT_NE(NULL, ref);
	ASSERT_NE(NULL, p);
	pfn = pfn_of(ref);
	if (madvise((void *)p, getpagesize(), MADV_DONTNEED) && errno == ENOSYS)
		SKIP(goto out, "no madvise(2) in this kernel (CONFIG_ADVISE_SYSCALLS=n)");
	ASSERT_EQ(0, madvise((void *)p, getpagesize(), MADV_DONTNEED));
	EXPECT_EQ(*ref, *p);
	if (pfn)
		EXPECT_EQ(pfn, pfn_of(p));
out:
	munmap((void *)p, getpagesize());
	munmap((void *)ref, getpagesize());
	close(fd);
}

/* Children, inherited mapping or their own, all see the one live page at once. */
TEST(children_see_the_same_live_page)
{
	enum { CHILDREN = 8 };
	const volatile uint32_t *p;
	int fd, status, i, go[2];
	pid_t pid[CHILDREN];
	uint64_t pfn;

	EPOCH_FD_OR_SKIP(fd);
	p = map_epoch(fd, PROT_READ, MAP_PRIVATE);
	ASSERT_NE(NULL, p);
	pfn = pfn_of(p);
	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < CHILDREN; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			const volatile uint32_t *own;
			char c;
			int cfd;

			close(go[1]);
			if (read(go[0], &c, 1) != 0)	/* all start together */
				_exit(2);
			cfd = rndepoch(i & 1 ? "/dev/random" : "/dev/urandom");
			if (cfd < 0)
				_exit(3);
			own = map_epoch(cfd, PROT_READ, i & 2 ? MAP_SHARED : MAP_PRIVATE);
			if (!own)
				_exit(4);
			if (*own != *p)
				_exit(5);
			if (pfn && (pfn_of(p) != pfn || pfn_of(own) != pfn))
				_exit(6);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]);
	for (i = 0; i < CHILDREN; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child %d: 3 RNDEPOCH, 4 mmap, "
							 "5 other value, 6 other page", i);
	}
	munmap((void *)p, getpagesize());
	close(fd);
}

/* The epoch moves on a leak only: while nothing happens, it stays. */
TEST(epoch_unchanged_without_a_leak)
{
	const volatile uint32_t *p;
	unsigned char buf[4096];
	uint32_t before;
	int fd, i;

	EPOCH_FD_OR_SKIP(fd);
	p = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, p);
	before = *p;
	for (i = 0; i < 64; i++)
		ASSERT_EQ(sizeof(buf), getrandom(buf, sizeof(buf), 0));
	usleep(200 * 1000);
	EXPECT_EQ(before, *p);
	munmap((void *)p, getpagesize());
	close(fd);
}

/*
 * poll() and epoll on the descriptor: not readable while the epoch stays where RNDEPOCH,
 * or the last read(), found it; read() never blocks, returns the epoch as poll() compares
 * it (the page's value in bits 31:0) and refuses fewer than 8 bytes; write() is EBADF.
 * That a move wakes a poller needs a host that moves the epoch: the user-space suite's
 * epoch_poll_test (snapshot-scenarios/userspace.py).
 */
TEST(poll_read_and_acknowledge)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd;
	const volatile uint32_t *p;
	uint64_t v;
	int fd, ep;

	EPOCH_FD_OR_SKIP(fd);
	p = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, p);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 100))
		TH_LOG("a new descriptor polls readable (revents %#x), the epoch unmoved",
		       pfd.revents);
	ASSERT_EQ(sizeof(v), read(fd, &v, sizeof(v))) TH_LOG("read: %s", strerror(errno));
	EXPECT_EQ(*p, (uint32_t)v);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(-1, read(fd, &v, 4));
	EXPECT_EQ(EINVAL, errno) TH_LOG("read of 4 bytes: %s, want EINVAL", strerror(errno));
	EXPECT_EQ(-1, write(fd, &v, sizeof(v)));
	EXPECT_EQ(EBADF, errno) TH_LOG("write: %s, want EBADF", strerror(errno));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) TH_LOG("epoll_ctl: %s",
								  strerror(errno));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	close(ep);
	munmap((void *)p, getpagesize());
	close(fd);
}

static int write_sysfs(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, value, strlen(value)) == (ssize_t)strlen(value) ? 0 : -1;
	close(fd);
	return ret;
}

/*
 * Unbinding the only notifier (virtio-rng) takes RNDEPOCH back to ENOTTY; mappings stay
 * valid; binding again brings it back.  Also runs the driver's remove and probe paths.
 */
TEST(unbind_and_bind_virtio_rng)
{
	const volatile uint32_t *p;
	char dev[NAME_MAX + 1];
	int fd, again;
	uint32_t before;

	EPOCH_FD_OR_SKIP(fd);
	if (virtio_rng_feature(VIRTIO_RNG_F_LEAK, dev, sizeof(dev)) != 1)
		SKIP(goto out, "the epoch notifier is not virtio-rng");
	if (geteuid() != 0)
		SKIP(goto out, "unbinding a driver needs root");
	p = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, p);
	before = *p;

	ASSERT_EQ(0, write_sysfs("/sys/bus/virtio/drivers/virtio_rng/unbind", dev))
		TH_LOG("unbind %s: %s", dev, strerror(errno));
	again = rndepoch("/dev/urandom");
	if (p[EPOCH_VM_COUNTER_OFFSET_WORD] >= (uint32_t)getpagesize()) {
		/* A VM generation counter (VMClock) is an epoch source too. */
		EXPECT_LE(0, again) TH_LOG("RNDEPOCH with the VM counter: %s", strerror(errno));
	} else {
		EXPECT_EQ(-1, again);
		EXPECT_EQ(ENOTTY, errno);
	}
	if (again >= 0)
		close(again);
	EXPECT_EQ(before, *p);

	ASSERT_EQ(0, write_sysfs("/sys/bus/virtio/drivers/virtio_rng/bind", dev))
		TH_LOG("bind %s: %s", dev, strerror(errno));
	again = rndepoch("/dev/urandom");
	EXPECT_LE(0, again) TH_LOG("RNDEPOCH after bind: %s", strerror(errno));
	if (again >= 0)
		close(again);
	munmap((void *)p, getpagesize());
out:
	close(fd);
}

/*
 * A suspend and resume of the devices (pm_test "devices": freeze, then restore, without
 * sleeping for real) runs the driver's freeze and restore paths: the epoch keeps its page
 * and value, and RNDEPOCH works again afterwards.
 */
TEST(suspend_and_resume_keep_the_epoch)
{
	const volatile uint32_t *p, *q;
	uint32_t before;
	int fd, again;

	EPOCH_FD_OR_SKIP(fd);
	if (access("/sys/power/pm_test", W_OK))
		SKIP(goto out, "no /sys/power/pm_test (CONFIG_SUSPEND, CONFIG_PM_DEBUG)");
	p = map_epoch(fd, PROT_READ, MAP_SHARED);
	ASSERT_NE(NULL, p);
	before = *p;

	write_sysfs("/sys/module/suspend/parameters/pm_test_delay", "0");
	ASSERT_EQ(0, write_sysfs("/sys/power/pm_test", "devices"));
	EXPECT_EQ(0, write_sysfs("/sys/power/state", "freeze"))
		TH_LOG("suspend: %s", strerror(errno));
	ASSERT_EQ(0, write_sysfs("/sys/power/pm_test", "none"));

	EXPECT_EQ(before, *p);
	again = rndepoch("/dev/urandom");
	ASSERT_LE(0, again) TH_LOG("RNDEPOCH after resume: %s", strerror(errno));
	q = map_epoch(again, PROT_READ, MAP_PRIVATE);
	ASSERT_NE(NULL, q);
	EXPECT_EQ(*p, *q);
	if (pfn_of(p))
		EXPECT_EQ(pfn_of(p), pfn_of(q));
	munmap((void *)q, getpagesize());
	munmap((void *)p, getpagesize());
	close(again);
out:
	close(fd);
}

TEST_HARNESS_MAIN

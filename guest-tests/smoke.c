// SPDX-License-Identifier: GPL-2.0
/*
 * smoke - the guest is usable for the other tests: the console works, the kernel RNG
 * answers, and QEMU's virtio-rng device is bound and delivers bytes through hw_random.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

TEST(getrandom_returns_distinct_output)
{
	unsigned char a[32], b[32];

	ASSERT_EQ(sizeof(a), getrandom(a, sizeof(a), 0));
	ASSERT_EQ(sizeof(b), getrandom(b, sizeof(b), 0));
	ASSERT_NE(0, memcmp(a, b, sizeof(a)));
}

TEST(virtio_rng_is_the_current_hwrng)
{
	char buf[128];

	ASSERT_LT(0, read_file("/sys/class/misc/hw_random/rng_current", buf, sizeof(buf)))
		TH_LOG("no hw_random device: is -device virtio-rng-pci on the QEMU command line?");
	ASSERT_EQ(0, strncmp(buf, "virtio_rng.", strlen("virtio_rng.")))
		TH_LOG("rng_current is '%s'", buf);
}

TEST(hwrng_delivers_bytes_from_the_device)
{
	unsigned char buf[64], zero[64] = { 0 };
	int fd = open("/dev/hwrng", O_RDONLY);
	size_t got = 0;

	ASSERT_LE(0, fd) TH_LOG("open /dev/hwrng: %s", strerror(errno));
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		ASSERT_LT(0, n) TH_LOG("read /dev/hwrng: %s", strerror(errno));
		got += n;
	}
	close(fd);
	ASSERT_NE(0, memcmp(buf, zero, sizeof(buf)));
}

TEST(configfs_is_mounted)
{
	struct stat st;

	ASSERT_EQ(0, stat("/sys/kernel/config", &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
}

TEST_HARNESS_MAIN

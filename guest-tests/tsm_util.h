/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsm_util.h - configfs-tsm and sev-snp-responder helpers for the guest tests.
 *
 * The report layout is the SEV-SNP ABI's ATTESTATION_REPORT; the responder's registers
 * and certificate table are docs/snp-responder.md.
 */
#ifndef RESEED_TSM_UTIL_H
#define RESEED_TSM_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define TSM_REPORT_DIR		"/sys/kernel/config/tsm/report"
#define TSM_INBLOB_MAX		64
#define TSM_PRIVLEVEL_MAX	3

#define SNP_REPORT_SIZE		0x4a0
#define SNP_REPORT_VERSION	0x000
#define SNP_REPORT_VMPL		0x030
#define SNP_REPORT_SIG_ALGO	0x034
#define SNP_REPORT_DATA		0x050
#define SNP_REPORT_ID		0x140
#define SNP_REPORT_SIG		0x2a0

/* Status values of the PSP (SEV firmware ABI). */
#define SEV_RET_INVALID_PARAM	0x16

/* The responder's registers (BAR0). */
#define RESPONDER_VENDOR	0x1b36
#define RESPONDER_DEVICE	0x0f53
#define RESP_REG_MAGIC		0x00
#define RESP_REG_REQUESTS	0x38
#define RESP_REG_LAST_NS	0x40
#define RESP_REG_FAIL_NEXT	0x48
#define RESPONDER_MAGIC		0x52504e53

static inline uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* "/sys/kernel/config/tsm/report/NAME/ATTR" */
static inline void tsm_path(char *buf, size_t len, const char *item, const char *attr)
{
	snprintf(buf, len, TSM_REPORT_DIR "/%s%s%s", item, attr ? "/" : "", attr ? attr : "");
}

/* mkdir of a report item: 0 or the errno. */
static inline int tsm_mkdir(const char *item)
{
	char p[256];

	tsm_path(p, sizeof(p), item, NULL);
	return mkdir(p, 0755) ? errno : 0;
}

static inline int tsm_rmdir(const char *item)
{
	char p[256];

	tsm_path(p, sizeof(p), item, NULL);
	return rmdir(p) ? errno : 0;
}

/*
 * Write an attribute in one write(2): 0 or the errno of open, write or close.
 * configfs hands a binary attribute to the driver at close, so its errors cannot be
 * seen here; a text attribute's are seen at write.
 */
static inline int tsm_write(const char *item, const char *attr, const void *buf, size_t len)
{
	char p[256];
	ssize_t n;
	int fd, err = 0;

	tsm_path(p, sizeof(p), item, attr);
	fd = open(p, O_WRONLY);
	if (fd < 0)
		return errno;
	n = write(fd, buf, len);
	if (n < 0)
		err = errno;
	else if ((size_t)n != len)
		err = EIO;
	if (close(fd) && !err)
		err = errno;
	return err;
}

static inline int tsm_write_str(const char *item, const char *attr, const char *s)
{
	return tsm_write(item, attr, s, strlen(s));
}

/* Read a whole attribute: its length, or -errno. */
static inline ssize_t tsm_read(const char *item, const char *attr, void *buf, size_t cap)
{
	char p[256];
	size_t got = 0;
	ssize_t n;
	int fd, err;

	tsm_path(p, sizeof(p), item, attr);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -errno;
	while (got < cap) {
		n = read(fd, (char *)buf + got, cap - got);
		if (n < 0) {
			err = errno;
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		got += n;
	}
	close(fd);
	return got;
}

/* A text attribute as a number; -1 with errno set when unreadable. */
static inline long long tsm_read_num(const char *item, const char *attr)
{
	char buf[64];
	ssize_t n = tsm_read(item, attr, buf, sizeof(buf) - 1);

	if (n < 0) {
		errno = -n;
		return -1;
	}
	buf[n] = 0;
	return strtoll(buf, NULL, 0);
}

/*
 * One attestation report, the way an agent gets it: mkdir @item, write @nonce as its
 * inblob, read the outblob into @report and check that it carries @nonce, rmdir.
 * Returns 0 or an errno (EIO: a short outblob; EBADMSG: the report carries another
 * nonce), and in *@stage the step that failed.
 */
static inline int tsm_report_once(const char *item, const uint8_t nonce[TSM_INBLOB_MAX],
				  uint8_t report[SNP_REPORT_SIZE], const char **stage)
{
	ssize_t n;
	int err, rm;

	*stage = "mkdir";
	err = tsm_mkdir(item);
	if (err)
		return err;
	*stage = "inblob";
	err = tsm_write(item, "inblob", nonce, TSM_INBLOB_MAX);
	if (!err) {
		*stage = "outblob";
		n = tsm_read(item, "outblob", report, SNP_REPORT_SIZE);
		if (n < 0)
			err = -n;
		else if (n != SNP_REPORT_SIZE)
			err = EIO;
		else if (memcmp(report + SNP_REPORT_DATA, nonce, TSM_INBLOB_MAX))
			err = EBADMSG;
	}
	rm = tsm_rmdir(item);
	if (rm && !err) {
		*stage = "rmdir";
		err = rm;
	}
	return err;
}

/* The sev_guest module parameter vmpck_id, or -1. */
static inline int sev_vmpck_id(void)
{
	FILE *f = fopen("/sys/module/sev_guest/parameters/vmpck_id", "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* A certificate-table entry, docs/snp-responder.md. */
struct cert_entry {
	uint8_t guid[16];
	uint32_t offset;
	uint32_t length;
};

static const uint8_t GUID_VCEK[16] = { 0x63, 0xda, 0x75, 0x8d, 0xe6, 0x64, 0x45, 0x64,
				       0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd };
static const uint8_t GUID_ASK[16] = { 0x4a, 0xb7, 0xb3, 0x79, 0xbb, 0xac, 0x4f, 0xe4,
				      0xa0, 0x2f, 0x05, 0xae, 0xf3, 0x27, 0xc7, 0x82 };
static const uint8_t GUID_ARK[16] = { 0xc0, 0xb4, 0x06, 0xa4, 0xa8, 0x03, 0x49, 0x52,
				      0x97, 0x43, 0x3f, 0xb6, 0x01, 0x4c, 0xd0, 0xae };

/*
 * Find a certificate in a table of len bytes: its entry, or NULL.  An entry that points
 * outside the table counts as absent.
 */
static inline const struct cert_entry *cert_find(const uint8_t *table, size_t len,
						 const uint8_t guid[16])
{
	static const uint8_t zero[sizeof(struct cert_entry)];
	size_t off;

	for (off = 0; off + sizeof(struct cert_entry) <= len; off += sizeof(struct cert_entry)) {
		const struct cert_entry *e = (const void *)(table + off);

		if (!memcmp(e, zero, sizeof(zero)))
			return NULL;
		if (!memcmp(e->guid, guid, 16))
			return (size_t)e->offset + e->length <= len ? e : NULL;
	}
	return NULL;
}

/* A sysfs file holding one hex number (0x1b36), or 0 when unreadable. */
static inline unsigned int read_hex_file(const char *path)
{
	unsigned int v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%x", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * The responder's BAR0, mapped through sysfs: the register block, or NULL when the
 * device is absent.
 */
static inline volatile uint8_t *responder_map(void)
{
	const char *base = "/sys/bus/pci/devices";
	volatile uint8_t *regs = NULL;
	struct dirent *d;
	DIR *dir = opendir(base);

	if (!dir)
		return NULL;
	while (!regs && (d = readdir(dir))) {
		char p[512];
		unsigned int vendor, device;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/vendor", base, d->d_name);
		vendor = read_hex_file(p);
		snprintf(p, sizeof(p), "%s/%s/device", base, d->d_name);
		device = read_hex_file(p);
		if (vendor != RESPONDER_VENDOR || device != RESPONDER_DEVICE)
			continue;
		snprintf(p, sizeof(p), "%s/%s/resource0", base, d->d_name);
		fd = open(p, O_RDWR | O_SYNC);
		if (fd < 0)
			continue;
		regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (regs == MAP_FAILED)
			regs = NULL;
	}
	closedir(dir);
	return regs;
}

static inline uint64_t responder_reg64(volatile uint8_t *regs, unsigned int off)
{
	return *(volatile uint64_t *)(regs + off);
}

/* The test transport's PCI driver (CONFIG_SEV_GUEST_TEST_TRANSPORT). */
#define TRANSPORT_DRIVER	"/sys/bus/pci/drivers/sev-test-transport"

/*
 * The PCI address ("0000:00:04.0") of the device the test transport is bound to, in
 * @bdf: 0, or ENOENT when it is bound to none.
 */
static inline int transport_device(char *bdf, size_t len)
{
	DIR *dir = opendir(TRANSPORT_DRIVER);
	struct dirent *d;
	int err = ENOENT;

	if (!dir)
		return ENOENT;
	while (err && (d = readdir(dir))) {
		size_t n = strlen(d->d_name);

		if (strchr(d->d_name, ':') && n < len) {
			memcpy(bdf, d->d_name, n + 1);
			err = 0;
		}
	}
	closedir(dir);
	return err;
}

/* Write @bdf to the test transport's "bind" or "unbind": 0 or the errno. */
static inline int transport_bind(const char *attr, const char *bdf)
{
	char p[256];
	ssize_t n;
	int fd, err = 0;

	snprintf(p, sizeof(p), TRANSPORT_DRIVER "/%s", attr);
	fd = open(p, O_WRONLY);
	if (fd < 0)
		return errno;
	n = write(fd, bdf, strlen(bdf));
	if (n < 0)
		err = errno;
	close(fd);
	return err;
}

#endif /* RESEED_TSM_UTIL_H */

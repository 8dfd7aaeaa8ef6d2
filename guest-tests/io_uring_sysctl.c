// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_sysctl - kernel.io_uring_disabled and kernel.io_uring_group behave as upstream
 * (v6.6, commit 76d3ccecfa18):
 *
 *   io_uring_disabled 0: everyone may create rings; 1: only CAP_SYS_ADMIN or members of
 *   io_uring_group; 2: nobody.  Refusal is EPERM from io_uring_setup(), before the
 *   arguments are looked at.  Values outside 0..2 are refused with EINVAL and change
 *   nothing.  io_uring_group defaults to -1, no group.  Rings that exist keep working.
 *
 * Runs as root in the guest.  Every identity is taken in a forked child (setgroups,
 * setgid, setuid, or dropping CAP_SYS_ADMIN from root) that reports io_uring_setup()'s
 * result in its exit status.  Each case restores both sysctls in its teardown, and the
 * program restores them once more at exit.  Names and order are fixed, so that the
 * output of two kernels can be compared line by line (scripts/differential.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/io_uring.h>

#include "kselftest_harness.h"
#include "harness_compat.h"

#define DISABLED_PATH	"/proc/sys/kernel/io_uring_disabled"
#define GROUP_PATH	"/proc/sys/kernel/io_uring_group"

/* Identities the cases take; none of them exists in the initramfs, none needs to. */
#define USER_UID	1000
#define USER_GID	1000
#define IO_URING_GID	4242
#define NO_GROUP	-1

/* Exit statuses of the identity children that are not an errno of io_uring_setup(). */
#define CHILD_SETGROUPS_FAILED	201
#define CHILD_SETGID_FAILED	202
#define CHILD_SETUID_FAILED	203
#define CHILD_CAPS_FAILED	204
#define CHILD_PIPE_FAILED	205
#define CHILD_RING_FAILED	206

/* --- sysctl access ------------------------------------------------------------------ */

/* Returns 0 or the errno of the open or the write. */
static int sysctl_write(const char *path, const char *value)
{
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	n = write(fd, value, strlen(value));
	if (n < 0)
		err = errno;
	else if ((size_t)n != strlen(value))
		err = EIO;
	close(fd);
	return err;
}

static int sysctl_write_int(const char *path, int value)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d\n", value);
	return sysctl_write(path, buf);
}

/* Returns 0 and the value, or the errno of the open or the read. */
static int sysctl_read_int(const char *path, int *value)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? errno : EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%d", value) != 1)
		return EIO;
	return 0;
}

/* Both sysctls as a test found them, so that its teardown can put them back. */
struct io_uring_sysctls {
	int disabled, group;
};

static int sysctls_save(struct io_uring_sysctls *saved)
{
	return sysctl_read_int(DISABLED_PATH, &saved->disabled) ?:
	       sysctl_read_int(GROUP_PATH, &saved->group);
}

static void sysctls_restore(const struct io_uring_sysctls *saved)
{
	sysctl_write_int(DISABLED_PATH, saved->disabled);
	sysctl_write_int(GROUP_PATH, saved->group);
}

static bool sysctls_present(void)
{
	return access(DISABLED_PATH, F_OK) == 0 && access(GROUP_PATH, F_OK) == 0;
}

/*
 * The values found at start-up, written back when the program exits, whatever the
 * cases did (a case killed by a signal does not run its teardown).
 */
static int initial_disabled = -1, initial_group;
static pid_t main_pid;

static void restore_initial_sysctls(void)
{
	if (getpid() != main_pid || initial_disabled < 0)
		return;
	sysctl_write_int(DISABLED_PATH, initial_disabled);
	sysctl_write_int(GROUP_PATH, initial_group);
}

static void __attribute__((constructor)) save_initial_sysctls(void)
{
	main_pid = getpid();
	if (sysctl_read_int(DISABLED_PATH, &initial_disabled) ||
	    sysctl_read_int(GROUP_PATH, &initial_group)) {
		initial_disabled = -1;
		return;
	}
	atexit(restore_initial_sysctls);
}

/* --- io_uring without liburing --------------------------------------------------------- */

static int io_uring_setup(unsigned int entries, struct io_uring_params *p)
{
	return syscall(__NR_io_uring_setup, entries, p);
}

static int io_uring_enter(int fd, unsigned int to_submit, unsigned int min_complete,
			  unsigned int flags)
{
	return syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, NULL, 0);
}

/* Returns 0 when a ring could be created (and closes it), or io_uring_setup()'s errno. */
static int try_create_ring(void)
{
	struct io_uring_params p;
	int fd;

	memset(&p, 0, sizeof(p));
	fd = io_uring_setup(4, &p);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

struct ring {
	int fd;
	struct io_uring_params p;
	void *sq_map, *cq_map;
	size_t sq_map_len, cq_map_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
};

/* Returns 0, or the errno of io_uring_setup() or of mmap(). */
static int ring_open(struct ring *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = io_uring_setup(4, &r->p);
	if (r->fd < 0)
		return errno;

	r->sq_map_len = r->p.sq_off.array + r->p.sq_entries * sizeof(__u32);
	r->cq_map_len = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
	if (r->p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_map_len > r->sq_map_len)
			r->sq_map_len = r->cq_map_len;
		r->cq_map_len = r->sq_map_len;
	}
	r->sq_map = mmap(NULL, r->sq_map_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED)
		return errno;
	if (r->p.features & IORING_FEAT_SINGLE_MMAP)
		r->cq_map = r->sq_map;
	else
		r->cq_map = mmap(NULL, r->cq_map_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	if (r->cq_map == MAP_FAILED)
		return errno;
	r->sqes_len = r->p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return errno;
	return 0;
}

static void ring_close(struct ring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != MAP_FAILED && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_map_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_map_len);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

#define RING_U32(map, offset)	((__u32 *)((char *)(map) + (offset)))
#define NOP_USER_DATA		0x10c0ffeeULL

/*
 * Submits one IORING_OP_NOP and reaps its completion through the mapped rings.
 * Returns 0 when the completion came back with res 0 and our user_data, else
 * io_uring_enter()'s errno or EPROTO.
 */
static int ring_nop(struct ring *r)
{
	__u32 *sq_tail = RING_U32(r->sq_map, r->p.sq_off.tail);
	__u32 sq_mask = *RING_U32(r->sq_map, r->p.sq_off.ring_mask);
	__u32 *sq_array = RING_U32(r->sq_map, r->p.sq_off.array);
	__u32 *cq_head = RING_U32(r->cq_map, r->p.cq_off.head);
	__u32 *cq_tail = RING_U32(r->cq_map, r->p.cq_off.tail);
	__u32 cq_mask = *RING_U32(r->cq_map, r->p.cq_off.ring_mask);
	struct io_uring_cqe *cqes = (void *)((char *)r->cq_map + r->p.cq_off.cqes);
	struct io_uring_cqe *cqe;
	__u32 tail, head, index;
	int ret;

	tail = __atomic_load_n(sq_tail, __ATOMIC_RELAXED);
	index = tail & sq_mask;
	memset(&r->sqes[index], 0, sizeof(r->sqes[index]));
	r->sqes[index].opcode = IORING_OP_NOP;
	r->sqes[index].user_data = NOP_USER_DATA;
	sq_array[index] = index;
	__atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);

	ret = io_uring_enter(r->fd, 1, 1, IORING_ENTER_GETEVENTS);
	if (ret < 0)
		return errno;
	if (ret != 1)
		return EPROTO;

	head = __atomic_load_n(cq_head, __ATOMIC_RELAXED);
	if (__atomic_load_n(cq_tail, __ATOMIC_ACQUIRE) == head)
		return EPROTO;
	cqe = &cqes[head & cq_mask];
	ret = (cqe->user_data == NOP_USER_DATA && cqe->res == 0) ? 0 : EPROTO;
	__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
	return ret;
}

/* --- identities ------------------------------------------------------------------------ */

struct identity {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[1];
	bool drop_cap_sys_admin;	/* for uid 0: keep root, lose CAP_SYS_ADMIN */
};

static const struct identity root = { 0, 0, 0, { 0 }, false };
static const struct identity root_in_group = { 0, 0, 1, { IO_URING_GID }, false };
static const struct identity root_without_cap = { 0, 0, 0, { 0 }, true };
static const struct identity root_without_cap_in_group = {
	0, 0, 1, { IO_URING_GID }, true
};
static const struct identity user = { USER_UID, USER_GID, 0, { 0 }, false };
static const struct identity user_supplementary_member = {
	USER_UID, USER_GID, 1, { IO_URING_GID }, false
};
static const struct identity user_primary_member = {
	USER_UID, IO_URING_GID, 0, { 0 }, false
};

static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct header = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned int word = CAP_TO_INDEX(CAP_SYS_ADMIN);
	__u32 bit = CAP_TO_MASK(CAP_SYS_ADMIN);

	if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0))
		return -1;
	if (syscall(SYS_capget, &header, data))
		return -1;
	data[word].effective &= ~bit;
	data[word].permitted &= ~bit;
	data[word].inheritable &= ~bit;
	if (syscall(SYS_capset, &header, data))
		return -1;
	/* Check that it is gone, rather than trusting capset(). */
	if (syscall(SYS_capget, &header, data) || (data[word].effective & bit))
		return -1;
	return 0;
}

/* In a child: become @id, or _exit() with a CHILD_*_FAILED status. */
static void become(const struct identity *id)
{
	if (setgroups(id->ngroups, id->groups))
		_exit(CHILD_SETGROUPS_FAILED);
	if (setgid(id->gid))
		_exit(CHILD_SETGID_FAILED);
	if (setuid(id->uid))
		_exit(CHILD_SETUID_FAILED);
	if (id->drop_cap_sys_admin && drop_cap_sys_admin())
		_exit(CHILD_CAPS_FAILED);
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * io_uring_setup(4, params) as @id.  Returns 0 when a ring was created, io_uring_setup()'s
 * errno otherwise, a CHILD_*_FAILED status, or -1 when the child died.
 */
static int setup_as(const struct identity *id, const struct io_uring_params *params)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct io_uring_params p;
		int fd;

		become(id);
		if (params)
			p = *params;
		fd = io_uring_setup(4, params ? &p : NULL);
		_exit(fd >= 0 ? 0 : errno);
	}
	return wait_child(pid);
}

static int create_ring_as(const struct identity *id)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	return setup_as(id, &p);
}

/*
 * As @id: open a ring while the sysctls are as they are now, let the parent set
 * io_uring_disabled to @disabled, then run a NOP on the ring.  Returns 0, the ring's
 * errno, a CHILD_*_FAILED status, or -1.
 */
static int ring_survives_switch_as(const struct identity *id, int disabled)
{
	int opened[2], switched[2];
	char byte = 0;
	pid_t pid;
	int ret;

	if (pipe(opened) || pipe(switched))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct ring r;

		close(opened[0]);
		close(switched[1]);
		become(id);
		ret = ring_open(&r);
		if (write(opened[1], ret ? "e" : "o", 1) != 1)
			_exit(CHILD_PIPE_FAILED);
		if (ret)
			_exit(CHILD_RING_FAILED);
		if (read(switched[0], &byte, 1) != 1)
			_exit(CHILD_PIPE_FAILED);
		ret = ring_nop(&r);
		ring_close(&r);
		_exit(ret);
	}
	close(opened[1]);
	close(switched[0]);
	if (read(opened[0], &byte, 1) == 1 && byte == 'o')
		sysctl_write_int(DISABLED_PATH, disabled);
	if (write(switched[1], "s", 1) != 1)
		byte = 0;
	close(opened[0]);
	close(switched[1]);
	return wait_child(pid);
}

/* --- the sysctl files themselves -------------------------------------------------------- */

FIXTURE(sysctl_values) {
	struct io_uring_sysctls saved;
};

FIXTURE_SETUP(sysctl_values)
{
	if (!sysctls_present())
		SKIP(return, "kernel has no kernel.io_uring_disabled / io_uring_group");
	ASSERT_EQ(0, sysctls_save(&self->saved));
}

FIXTURE_TEARDOWN(sysctl_values)
{
	if (HARNESS_SKIPPED(_metadata))
		return;
	sysctls_restore(&self->saved);
}


TEST_F(sysctl_values, defaults_are_0_and_minus_1)
{
	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, self->saved.disabled);
	ASSERT_EQ(-1, self->saved.group);
}

TEST_F(sysctl_values, disabled_accepts_0_1_2)
{
	int value, v;

	RETURN_IF_SKIPPED();
	for (v = 2; v >= 0; v--) {
		ASSERT_EQ(0, sysctl_write_int(DISABLED_PATH, v)) TH_LOG("writing %d", v);
		ASSERT_EQ(0, sysctl_read_int(DISABLED_PATH, &value));
		ASSERT_EQ(v, value);
	}
}

/* Starts from 1, so that neither "reset to 0" nor "clamped to 2" passes for "unchanged". */
static void check_refused(struct __test_metadata *_metadata, const char *path,
			  int start, const char *bad)
{
	int value;

	ASSERT_EQ(0, sysctl_write_int(path, start));
	ASSERT_EQ(EINVAL, sysctl_write(path, bad)) TH_LOG("writing '%s'", bad);
	ASSERT_EQ(0, sysctl_read_int(path, &value));
	ASSERT_EQ(start, value);
}

TEST_F(sysctl_values, disabled_refuses_3)
{
	RETURN_IF_SKIPPED();
	check_refused(_metadata, DISABLED_PATH, 1, "3\n");
}

TEST_F(sysctl_values, disabled_refuses_minus_1)
{
	RETURN_IF_SKIPPED();
	check_refused(_metadata, DISABLED_PATH, 1, "-1\n");
}

TEST_F(sysctl_values, disabled_refuses_text)
{
	RETURN_IF_SKIPPED();
	check_refused(_metadata, DISABLED_PATH, 1, "off\n");
}

TEST_F(sysctl_values, group_accepts_a_gid_and_minus_1)
{
	int value;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, sysctl_write_int(GROUP_PATH, IO_URING_GID));
	ASSERT_EQ(0, sysctl_read_int(GROUP_PATH, &value));
	ASSERT_EQ(IO_URING_GID, value);
	ASSERT_EQ(0, sysctl_write_int(GROUP_PATH, -1));
	ASSERT_EQ(0, sysctl_read_int(GROUP_PATH, &value));
	ASSERT_EQ(-1, value);
}

TEST_F(sysctl_values, group_refuses_text)
{
	RETURN_IF_SKIPPED();
	check_refused(_metadata, GROUP_PATH, IO_URING_GID, "wheel\n");
}

TEST_F(sysctl_values, unprivileged_user_cannot_write)
{
	pid_t pid;

	RETURN_IF_SKIPPED();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		become(&user);
		_exit(sysctl_write(DISABLED_PATH, "0\n") == EACCES &&
		      sysctl_write(GROUP_PATH, "1000\n") == EACCES ? 0 : 1);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/* --- who may create a ring, for each value of io_uring_disabled ------------------------- */

FIXTURE(io_uring_disabled) {
	struct io_uring_sysctls saved;
};

/* Whether each kind of caller may create a ring at this value of io_uring_disabled. */
FIXTURE_VARIANT(io_uring_disabled) {
	int value;
	bool cap_sys_admin;	/* a process with CAP_SYS_ADMIN */
	bool group_member;	/* without it, in io_uring_group (set to a gid) */
	bool others;		/* without it, not in io_uring_group, or the group is -1 */
};

FIXTURE_VARIANT_ADD(io_uring_disabled, 0) {
	.value = 0, .cap_sys_admin = true, .group_member = true, .others = true,
};

FIXTURE_VARIANT_ADD(io_uring_disabled, 1) {
	.value = 1, .cap_sys_admin = true, .group_member = true, .others = false,
};

FIXTURE_VARIANT_ADD(io_uring_disabled, 2) {
	.value = 2, .cap_sys_admin = false, .group_member = false, .others = false,
};

FIXTURE_SETUP(io_uring_disabled)
{
	if (!sysctls_present())
		SKIP(return, "kernel has no kernel.io_uring_disabled / io_uring_group");
	ASSERT_EQ(0, sysctls_save(&self->saved));
}

FIXTURE_TEARDOWN(io_uring_disabled)
{
	if (HARNESS_SKIPPED(_metadata))
		return;
	sysctls_restore(&self->saved);
}

static void set_sysctls(struct __test_metadata *_metadata, int disabled, int group)
{
	ASSERT_EQ(0, sysctl_write_int(GROUP_PATH, group));
	ASSERT_EQ(0, sysctl_write_int(DISABLED_PATH, disabled));
}

/* Sets both sysctls, creates a ring as @id, and checks the outcome. */
static void check_create(struct __test_metadata *_metadata, int disabled, int group,
			 const struct identity *id, bool allowed)
{
	int ret;

	set_sysctls(_metadata, disabled, group);
	ret = create_ring_as(id);
	ASSERT_GE(ret, 0) TH_LOG("the child died");
	ASSERT_GT(200, ret) TH_LOG("the child could not take its identity (%d)", ret);
	ASSERT_EQ(allowed ? 0 : EPERM, ret);
}

#define CHECK_CREATE(group, id, allowed) do {				\
	RETURN_IF_SKIPPED();						\
	check_create(_metadata, variant->value, group, id, allowed);	\
} while (0)

TEST_F(io_uring_disabled, root)
{
	CHECK_CREATE(NO_GROUP, &root, variant->cap_sys_admin);
}

TEST_F(io_uring_disabled, root_not_in_group)
{
	CHECK_CREATE(IO_URING_GID, &root, variant->cap_sys_admin);
}

TEST_F(io_uring_disabled, root_in_group)
{
	CHECK_CREATE(IO_URING_GID, &root_in_group, variant->cap_sys_admin);
}

TEST_F(io_uring_disabled, root_without_cap_sys_admin)
{
	CHECK_CREATE(NO_GROUP, &root_without_cap, variant->others);
}

TEST_F(io_uring_disabled, root_without_cap_sys_admin_not_in_group)
{
	CHECK_CREATE(IO_URING_GID, &root_without_cap, variant->others);
}

TEST_F(io_uring_disabled, root_without_cap_sys_admin_in_group)
{
	CHECK_CREATE(IO_URING_GID, &root_without_cap_in_group, variant->group_member);
}

TEST_F(io_uring_disabled, user)
{
	CHECK_CREATE(NO_GROUP, &user, variant->others);
}

TEST_F(io_uring_disabled, user_not_in_group)
{
	CHECK_CREATE(IO_URING_GID, &user, variant->others);
}

TEST_F(io_uring_disabled, user_with_group_while_group_is_minus_1)
{
	CHECK_CREATE(NO_GROUP, &user_supplementary_member, variant->others);
}

TEST_F(io_uring_disabled, user_in_group_supplementary)
{
	CHECK_CREATE(IO_URING_GID, &user_supplementary_member, variant->group_member);
}

TEST_F(io_uring_disabled, user_in_group_primary)
{
	CHECK_CREATE(IO_URING_GID, &user_primary_member, variant->group_member);
}

/* A refused caller gets EPERM before io_uring_setup() reads its arguments. */
TEST_F(io_uring_disabled, user_refused_before_params_are_read)
{
	RETURN_IF_SKIPPED();
	set_sysctls(_metadata, variant->value, NO_GROUP);
	ASSERT_EQ(variant->others ? EFAULT : EPERM, setup_as(&user, NULL));
}

TEST_F(io_uring_disabled, root_refused_before_flags_are_checked)
{
	struct io_uring_params p;

	RETURN_IF_SKIPPED();
	memset(&p, 0, sizeof(p));
	p.flags = 1U << 31;
	set_sysctls(_metadata, variant->value, NO_GROUP);
	ASSERT_EQ(variant->cap_sys_admin ? EINVAL : EPERM, setup_as(&root, &p));
}

/* Rings opened under 0 keep working after the switch; new ones follow the setting. */
TEST_F(io_uring_disabled, root_ring_opened_before_completes_nop)
{
	struct ring r;

	RETURN_IF_SKIPPED();
	set_sysctls(_metadata, 0, NO_GROUP);
	ASSERT_EQ(0, ring_open(&r));
	ASSERT_EQ(0, sysctl_write_int(DISABLED_PATH, variant->value));
	ASSERT_EQ(variant->cap_sys_admin ? 0 : EPERM, try_create_ring());
	ASSERT_EQ(0, ring_nop(&r));
	ASSERT_EQ(0, ring_nop(&r));
	ring_close(&r);
}

TEST_F(io_uring_disabled, user_ring_opened_before_completes_nop)
{
	RETURN_IF_SKIPPED();
	set_sysctls(_metadata, 0, NO_GROUP);
	ASSERT_EQ(0, ring_survives_switch_as(&user, variant->value));
	ASSERT_EQ(variant->others ? 0 : EPERM, create_ring_as(&user));
}

TEST_HARNESS_MAIN

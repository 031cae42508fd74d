/*
 * sys.c - reading directories and the few syscalls the engine makes.
 *
 * Two builds: the Linux fast path (getdents64 through syscall() into one
 * large per-thread buffer, statx for the mount-root attribute) and, with
 * -DDE_PORTABLE (make PORTABLE=1), plain POSIX: fdopendir/readdir,
 * fstatat, unlinkat.  Every wrapper returns 0 / an fd, or a negative errno,
 * and first asks the test-only fault hook.  The bottom layer: it calls
 * nothing else of the engine (README, "Layers").
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef DE_PORTABLE
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif
#endif
#endif

/* See delete_engine.h. */
enum de_type de_type_of_mode(mode_t m)
{
	if (S_ISREG(m))
		return DE_T_FILE;
	if (S_ISDIR(m))
		return DE_T_DIR;
	if (S_ISLNK(m))
		return DE_T_SYMLINK;
	if (S_ISCHR(m) || S_ISBLK(m))
		return DE_T_DEVICE;
	if (S_ISFIFO(m) || S_ISSOCK(m))
		return DE_T_SPECIAL;
	return DE_T_UNKNOWN;
}

/* See delete_engine.h. */
enum de_type de_type_of_dtype(unsigned char t)
{
#ifdef DT_UNKNOWN
	switch (t) {
	case DT_REG: return DE_T_FILE;
	case DT_DIR: return DE_T_DIR;
	case DT_LNK: return DE_T_SYMLINK;
	case DT_CHR: case DT_BLK: return DE_T_DEVICE;
	case DT_FIFO: case DT_SOCK: return DE_T_SPECIAL;
	}
#else
	(void)t;
#endif
	return DE_T_UNKNOWN;
}

/*
 * Out of fds (the caller's own, or another thread's, took what the budget
 * assumed free)?  Have the tree close a held fd that no one is using
 * (ctx->shed_fd, node.c de__shed_fd: it is reopened, and checked, when
 * needed; a pointer, so that this layer calls nothing above it), else
 * wait a millisecond for another thread to drop one.  Returns 1 to try
 * again; 0 when e is another error, or after a second of waiting with
 * nothing to close (the entry then fails with EMFILE).
 */
static int fd_retry(de_ctx *ctx, int e, int *waits)
{
	struct timespec ms = { 0, 1000000 };

	if (e != EMFILE && e != ENFILE)
		return 0;
	if (ctx->shed_fd(ctx))
		return 1;
	if (++*waits > 1000)
		return 0;
	nanosleep(&ms, NULL);
	return 1;
}

/*
 * Open directory name under dfd without following a symlink at the last
 * component (dfd is itself a verified directory fd, so no component is
 * ever resolved through a symlink).  Returns the fd or a negative errno.
 */
static int open_dir(de_ctx *ctx, int dfd, const char *name)
{
	int fd, waits = 0;

	do {
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0)
			return fd;
	} while (fd_retry(ctx, errno, &waits));
	return -errno;
}

/* Reopen a directory that was opened (and checked) before, its fd closed
 * for the budget (node.c): the fault hook is asked with DE_OP_REOPEN, so
 * tests can count these. */
int de__reopen_dir(de_ctx *ctx, int dfd, const char *name)
{
	int e = de__fault(ctx, DE_OP_REOPEN, name);

	return e ? -e : open_dir(ctx, dfd, name);
}

/* open_dir(), the fault hook asked first (DE_OP_OPEN). */
int de__open_dir(de_ctx *ctx, int dfd, const char *name)
{
	int e = de__fault(ctx, DE_OP_OPEN, name);

	return e ? -e : open_dir(ctx, dfd, name);
}

/* unlinkat() returning 0 or a negative errno (unlink.c de__remove_at paces
 * and counts it). */
int de__unlinkat(de_ctx *ctx, int dfd, const char *name, int flags)
{
	int e = de__fault(ctx, (flags & AT_REMOVEDIR) ? DE_OP_RMDIR :
			  DE_OP_UNLINK, name);

	if (e)
		return -e;
	if (unlinkat(dfd, name, flags))
		return -errno;
	return 0;
}

#if !defined(DE_PORTABLE) && defined(O_PATH)
/* An O_PATH fd of name under dfd, not followed if a symlink; a path with
 * no symlink and no mount point on it (de__touch_at).  A single name needs
 * no more than openat(); openat2() is asked only for a path, so a seccomp
 * filter that refuses it (EPERM, not ENOSYS) costs only the peeked
 * fillers.  -1 with errno. */
static int open_beneath(int dfd, const char *name)
{
	if (!strchr(name, '/'))
		return openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};

	return (int)syscall(SYS_openat2, dfd, name, &how, sizeof(how));
#else
	errno = ENOSYS;
	return -1;
#endif
}
#endif

/*
 * Mark file name under dfd changed, its mode set to what it is, if it is
 * still the regular file (dev, ino) that was listed: its inode-table
 * block joins the running transaction (global.c, "Filling the holes",
 * says why), and its ctime is now.  The file checked is the file changed: it is
 * held by an O_PATH fd, and chmod goes through /proc/self/fd to it.
 * name may be a path below dfd (peek.c: "dir/file"), resolved by
 * openat2() beneath dfd, through no symlink and across no mount.
 * Returns 0 or a negative errno (-ESTALE: not that file; -ENOSYS: the
 * portable build, which does not, or a path where openat2() is not).
 */
int de__touch_at(de_ctx *ctx, int dfd, const char *name, dev_t dev,
		 uint64_t ino)
{
	int e = de__fault(ctx, DE_OP_TOUCH, name);
#if !defined(DE_PORTABLE) && defined(O_PATH)
	char path[40];
	struct stat sb;
	int fd, rc = 0;

	if (e)
		return -e;
	fd = open_beneath(dfd, name);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		rc = -errno;
	} else if (!S_ISREG(sb.st_mode) || sb.st_dev != dev ||
		   (uint64_t)sb.st_ino != ino) {
		rc = -ESTALE;
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (chmod(path, sb.st_mode & 07777))
			rc = -errno;
	}
	close(fd);
	return rc;
#else
	(void)dfd;
	(void)name;
	(void)dev;
	(void)ino;
	return e ? -e : -ENOSYS;
#endif
}

static void st_from_stat(struct de__st *st, const struct stat *sb)
{
	st->dev = sb->st_dev;
	st->ino = sb->st_ino;
	st->mode = sb->st_mode;
	st->uid = sb->st_uid;
	st->mount_root = -1;
}

/* lstat of name under dfd.  Returns 0 or a negative errno. */
int de__lstatat(de_ctx *ctx, int dfd, const char *name, struct de__st *st)
{
	struct stat sb;
	int e = de__fault(ctx, DE_OP_STAT, name);

	if (e)
		return -e;
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW))
		return -errno;
	st_from_stat(st, &sb);
	return 0;
}

/*
 * Stat an open directory fd (name only for the fault hook), including
 * whether it is a mount root where statx can tell (same-device bind mounts
 * have the parent's st_dev, so only STATX_ATTR_MOUNT_ROOT catches them).
 */
int de__fstat(de_ctx *ctx, int fd, const char *name, struct de__st *st)
{
	int e = de__fault(ctx, DE_OP_STAT, name);

	if (e)
		return -e;
#if !defined(DE_PORTABLE) && defined(STATX_ATTR_MOUNT_ROOT)
	{
		struct statx sx;

		if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
			  STATX_TYPE | STATX_MODE | STATX_INO | STATX_UID,
			  &sx) == 0) {
			st->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
			st->ino = sx.stx_ino;
			st->mode = sx.stx_mode;
			st->uid = sx.stx_uid;
			st->mount_root = -1;
			if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
				st->mount_root = !!(sx.stx_attributes &
						    STATX_ATTR_MOUNT_ROOT);
			return 0;
		}
		if (errno != ENOSYS && errno != EINVAL)
			return -errno;
	}
#endif
	{
		struct stat sb;

		if (fstat(fd, &sb))
			return -errno;
		st_from_stat(st, &sb);
	}
	return 0;
}

/*
 * The id of the btrfs subvolume whose root directory fd is: what readdir
 * gives as the d_ino of the subvolume's entry in its parent (stat gives
 * 256 for every subvolume root).  Returns 0 when fd is not on btrfs or
 * the kernel cannot say.  Looking up objectid 256 needs no privilege.
 */
uint64_t de__subvol_id(int fd)
{
#ifndef DE_PORTABLE
	struct btrfs_ioctl_ino_lookup_args args = {
		.treeid = 0,
		.objectid = BTRFS_FIRST_FREE_OBJECTID,
	};

	if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args) == 0)
		return args.treeid;
#else
	(void)fd;
#endif
	return 0;
}

/* The monotonic clock in nanoseconds. */
uint64_t de__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* statfs f_type of the filesystem holding fd, 0 when unknown. */
long de__fs_type(int fd)
{
#ifndef DE_PORTABLE
	struct statfs sf;

	if (fstatfs(fd, &sf) == 0)
		return (long)sf.f_type;
#else
	(void)fd;
#endif
	return 0;
}

/*
 * The most blocks one jbd2 transaction of device dev's file system may
 * hold (a third of an ext4 journal), from /proc/fs/jbd2/NAME-8/info
 * ("... each up to N blocks"), NAME being the block device's; 0 when
 * unknown (not ext4, an external journal, no /proc).
 */
size_t de__journal_tx_blocks(dev_t dev)
{
#ifndef DE_PORTABLE
	char link[PATH_MAX], path[PATH_MAX + 32], buf[256];
	const char *name, *p;
	ssize_t len;
	int pfd;

	snprintf(path, sizeof path, "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	len = readlink(path, link, sizeof link - 1);
	if (len <= 0)
		return 0;
	link[len] = '\0';
	name = strrchr(link, '/');
	name = name ? name + 1 : link;
	snprintf(path, sizeof path, "/proc/fs/jbd2/%s-8/info", name);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	if (pfd < 0)
		return 0;
	len = read(pfd, buf, sizeof buf - 1);
	close(pfd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	p = strstr(buf, "each up to ");
	return p ? (size_t)strtoull(p + 11, NULL, 10) : 0;
#else
	(void)dev;
	return 0;
#endif
}

#ifndef DE_PORTABLE
struct de__dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/*
 * Read the whole directory fd, calling cb for each entry but "." and "..".
 * buf is DE__BUFSZ bytes (one per thread): 512 KiB holds about 16k entries
 * of short names per getdents64 call, so a 500k-entry directory takes ~30
 * calls.  names_ahead (policy.c de__want_names_ahead): look up the last
 * name of each call's batch before the next call, so that the client asks
 * the server for the next ones with their attributes.  Returns 0, a
 * negative errno from getdents64, or cb's non-zero.
 */
int de__read_dir(de_ctx *ctx, int fd, const char *name, void *buf,
		 int names_ahead, de__ent_cb cb, void *arg)
{
	int e = de__fault(ctx, DE_OP_READ, name);

	if (e)
		return -e;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, (size_t)DE__BUFSZ);
		long off = 0;
		const char *last = NULL;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		while (off < n) {
			struct de__dirent64 *d = (void *)((char *)buf + off);
			const char *nm = d->d_name;
			size_t len;
			int rc;

			off += d->d_reclen;
			if (nm[0] == '.' && (nm[1] == 0 ||
					     (nm[1] == '.' && nm[2] == 0)))
				continue;
			len = strlen(nm);
			rc = cb(arg, nm, len, d->d_ino, de_type_of_dtype(d->d_type));
			if (rc)
				return rc;
			last = nm;
		}
		if (names_ahead && last) {
			struct stat sb;

			/* Its result does not matter, only that it was asked. */
			(void)fstatat(fd, last, &sb, AT_SYMLINK_NOFOLLOW);
		}
	}
}
#else
/* Portable: readdir on a dup of fd (closedir closes only the dup). */
int de__read_dir(de_ctx *ctx, int fd, const char *name, void *buf,
		 int names_ahead, de__ent_cb cb, void *arg)
{
	int e = de__fault(ctx, DE_OP_READ, name);
	int dfd, rc = 0, waits = 0;
	DIR *d;
	struct dirent *de;

	(void)buf;
	(void)names_ahead;
	if (e)
		return -e;
	while ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		if (!fd_retry(ctx, errno, &waits))
			return -errno;
	d = fdopendir(dfd);
	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	for (;;) {
		const char *nm;
		enum de_type t = DE_T_UNKNOWN;

		errno = 0;
		de = readdir(d);
		if (!de) {
			rc = errno ? -errno : 0;
			break;
		}
		nm = de->d_name;
		if (nm[0] == '.' && (nm[1] == 0 ||
				     (nm[1] == '.' && nm[2] == 0)))
			continue;
#ifdef DT_UNKNOWN
		t = de_type_of_dtype(de->d_type);
#endif
		rc = cb(arg, nm, strlen(nm), de->d_ino, t);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}
#endif

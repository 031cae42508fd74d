/*
 * netfs: a network file system's latency, without a network.  A FUSE
 * file system (libfuse3) that passes every request through to a local
 * directory, and answers it only after the round trip a client of a
 * remote server would wait for.
 *
 *   netfs [--latency=MS] [--service=MS] [--slots=N] [--cache=nfs|none]
 *         SOURCE MOUNTPOINT [FUSE options]
 *
 * Each request takes one of --slots (16) and holds it for --latency (the
 * round trip, 2.0 ms) plus --service (the server's own time, 0.05 ms),
 * whatever the local call costs inside that time.  So one client sees a
 * request per round trip, and N clients see min(N, slots) of them.  The
 * slots are the requests in flight: the smaller of the client's RPC slot
 * table and the server's threads.  The daemon runs enough threads that
 * the slots, not it, are the limit.
 *
 * --cache says what the kernel may keep between requests:
 *   nfs   as a default NFS mount does (ac, lookupcache=all, rdirplus):
 *         names, negative names and attributes for 3 s (acregmin, the
 *         shortest of the defaults), and READDIRPLUS as NFS's client
 *         uses it: the first page of a listing carries the entries'
 *         attributes (and makes their names known), later pages only
 *         once the names are being looked up (the kernel's FUSE client
 *         took this heuristic from NFS's).  The default.
 *   none  as "noac,lookupcache=none,nordirplus": every path component
 *         is looked up, every attribute fetched, on each use.
 *
 * MOUNTPOINT/.netfs, a file no listing shows, holds the requests served
 * since the last reset by kind, and their total, as "name value" lines;
 * writing anything to it sets them to zero.  Reading it takes no slot.
 * The high-level API answers a lookup and a getattr with the same call,
 * so both count as "getattr".  bench/netfs/README.md says more.
 *
 * The command line, the start and the counters file are the skeleton's
 * (fusemodel.c); this file is the model's rule and its file operations.
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fusemodel.h"

static struct {
	double latency, service;	/* seconds */
	unsigned slots;
	int cache;			/* 1: nfs, 0: none */
} m = { .latency = 2.0e-3, .service = 0.05e-3, .slots = 16, .cache = 1 };

/* The options that set them, for the skeleton's getopt_long(). */
const struct option model_options[] = {
	{ "latency", required_argument, NULL, 'l' },
	{ "service", required_argument, NULL, 's' },
	{ "slots", required_argument, NULL, 'n' },
	{ "cache", required_argument, NULL, 'c' },
	{ NULL, 0, NULL, 0 }
};

static int src_fd = -1;		/* SOURCE, every path is taken relative to it */

/* The kinds of request counted, in the order .netfs lists them. */
enum kind {
	K_GETATTR, K_READDIR, K_OPENDIR, K_RELEASEDIR, K_OPEN, K_RELEASE,
	K_READ, K_WRITE, K_CREATE, K_MKDIR, K_UNLINK, K_RMDIR, K_RENAME,
	K_SETATTR, K_STATFS, K_OTHER, K_N
};
static const char *const kind_name[K_N] = {
	"getattr", "readdir", "opendir", "releasedir", "open", "release",
	"read", "write", "create", "mkdir", "unlink", "rmdir", "rename",
	"setattr", "statfs", "other",
};
static uint64_t count[K_N];	/* __atomic */

/* The server: slots free, and who waits for one. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t freed = PTHREAD_COND_INITIALIZER;
static unsigned in_flight;

/* A request being served on this thread: a call made inside another
 * (the library's own lookups while it fills a listing) is part of it. */
static __thread int serving;

/* A request's start: wait for a slot and take it; returns the time by
 * which end() answers, or 0 for a call inside a request. */
static uint64_t begin(enum kind k)
{
	if (serving++)
		return 0;
	__atomic_add_fetch(&count[k], 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mu);
	while (in_flight >= m.slots)
		pthread_cond_wait(&freed, &mu);
	in_flight++;
	pthread_mutex_unlock(&mu);
	return fm_now_ns() + (uint64_t)llround((m.latency + m.service) * 1e9);
}

/* Its end: wait out the round trip, free the slot, pass rc through. */
static int end(uint64_t due, int rc)
{
	if (--serving || !due)
		return rc;
	fm_sleep_until(due);
	pthread_mutex_lock(&mu);
	in_flight--;
	pthread_cond_signal(&freed);
	pthread_mutex_unlock(&mu);
	return rc;
}

/* SOURCE-relative form of a FUSE path ("/" is "."). */
static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

/* The counters file; no listing shows it, and reading it takes no slot. */
const char model_counters[] = "/.netfs";

void model_report(struct fm_text *t)
{
	uint64_t total = 0;
	int k;

	for (k = 0; k < K_N; k++) {
		uint64_t v = __atomic_load_n(&count[k], __ATOMIC_RELAXED);

		total += v;
		fm_line(t, kind_name[k], "%llu", (unsigned long long)v);
	}
	fm_line(t, "total", "%llu", (unsigned long long)total);
}

void model_reset(void)
{
	int k;

	for (k = 0; k < K_N; k++)
		__atomic_store_n(&count[k], 0, __ATOMIC_RELAXED);
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	uint64_t due;
	int rc;

	if (strcmp(path, model_counters) == 0) {
		struct fm_text t;

		fm_report(&t);
		memset(st, 0, sizeof *st);
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)t.len;
		return 0;
	}
	due = begin(K_GETATTR);
	if (fi)
		rc = fstat((int)fi->fh, st);
	else
		rc = fstatat(src_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
	return end(due, rc ? -errno : 0);
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	uint64_t due = begin(K_OTHER);
	ssize_t n = readlinkat(src_fd, rel(path), buf, size - 1);

	if (n >= 0)
		buf[n] = '\0';
	return end(due, n < 0 ? -errno : 0);
}

static int fs_opendir(const char *path, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_OPENDIR);
	int fd = openat(src_fd, rel(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return end(due, -errno);
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return end(due, -e);
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return end(due, 0);
}

/*
 * One READDIR: the entries from offset off that fit the kernel's buffer
 * (a page: about a hundred names, fewer with attributes), each with the
 * offset of the next.  A server's reply carries more (NFS asks for up to
 * its dtsize), so this charges a large directory a few more round trips
 * than NFS would: at most a few per hundred unlinks.  With --cache=nfs
 * each entry carries its attributes (READDIRPLUS), read here at no extra
 * charge, as the server reads them with the directory.
 */
static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	uint64_t due = begin(K_READDIR);
	struct dirent *de;
	int plus = m.cache && (flags & FUSE_READDIR_PLUS);

	(void)path;
	if (off)
		seekdir(d, off);
	else
		rewinddir(d);
	errno = 0;
	while ((de = readdir(d))) {
		enum fuse_fill_dir_flags ff = 0;
		struct stat st;

		memset(&st, 0, sizeof st);
		st.st_ino = de->d_ino;
		st.st_mode = (mode_t)DTTOIF(de->d_type);
		if (plus && strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			ff = FUSE_FILL_DIR_PLUS;
		if (fill(buf, de->d_name, &st, de->d_off, ff))
			break;
		errno = 0;
	}
	return end(due, errno ? -errno : 0);
}

static int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_RELEASEDIR);

	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return end(due, 0);
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_OPEN);
	int fd = openat(src_fd, rel(path), (fi->flags & ~O_NOFOLLOW) | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return end(due, -errno);
	fi->fh = (uint64_t)fd;
	return end(due, 0);
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_CREATE);
	int fd = openat(src_fd, rel(path), fi->flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);

	if (fd < 0)
		return end(due, -errno);
	fi->fh = (uint64_t)fd;
	return end(due, 0);
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_RELEASE);

	(void)path;
	close((int)fi->fh);
	return end(due, 0);
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	uint64_t due = begin(K_READ);
	ssize_t n = pread((int)fi->fh, buf, size, off);

	(void)path;
	return end(due, n < 0 ? -errno : (int)n);
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t due = begin(K_WRITE);
	ssize_t n = pwrite((int)fi->fh, buf, size, off);

	(void)path;
	return end(due, n < 0 ? -errno : (int)n);
}

static int fs_mkdir(const char *path, mode_t mode)
{
	uint64_t due = begin(K_MKDIR);

	return end(due, mkdirat(src_fd, rel(path), mode) ? -errno : 0);
}

static int fs_unlink(const char *path)
{
	uint64_t due = begin(K_UNLINK);

	return end(due, unlinkat(src_fd, rel(path), 0) ? -errno : 0);
}

static int fs_rmdir(const char *path)
{
	uint64_t due = begin(K_RMDIR);

	return end(due, unlinkat(src_fd, rel(path), AT_REMOVEDIR) ? -errno : 0);
}

static int fs_symlink(const char *target, const char *path)
{
	uint64_t due = begin(K_CREATE);

	return end(due, symlinkat(target, src_fd, rel(path)) ? -errno : 0);
}

static int fs_link(const char *from, const char *to)
{
	uint64_t due = begin(K_CREATE);

	return end(due, linkat(src_fd, rel(from), src_fd, rel(to), 0) ? -errno : 0);
}

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
	uint64_t due = begin(K_RENAME);

	return end(due, renameat2(src_fd, rel(from), src_fd, rel(to), flags) ? -errno : 0);
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_SETATTR);
	int rc = fi ? fchmod((int)fi->fh, mode) : fchmodat(src_fd, rel(path), mode, 0);

	return end(due, rc ? -errno : 0);
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_SETATTR);
	int rc = fi ? fchown((int)fi->fh, uid, gid)
		: fchownat(src_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);

	return end(due, rc ? -errno : 0);
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	uint64_t due = begin(K_SETATTR);
	int rc, fd;

	if (fi) {
		rc = ftruncate((int)fi->fh, size);
	} else {
		fd = openat(src_fd, rel(path), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -1 : ftruncate(fd, size);
		if (fd >= 0)
			close(fd);
	}
	return end(due, rc ? -errno : 0);
}

static int fs_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	uint64_t due = begin(K_SETATTR);
	int rc = fi ? futimens((int)fi->fh, tv)
		: utimensat(src_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);

	return end(due, rc ? -errno : 0);
}

static int fs_statfs(const char *path, struct statvfs *sv)
{
	uint64_t due = begin(K_STATFS);

	(void)path;
	return end(due, fstatvfs(src_fd, sv) ? -errno : 0);
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;	/* the source's inode numbers, as a server's */
	cfg->hard_remove = 1;	/* no hiding of open files: one UNLINK */
	cfg->direct_io = 0;
	conn->want |= FUSE_CAP_PARALLEL_DIROPS & conn->capable;
	if (m.cache) {
		cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 3.0;
		conn->want |= (FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO) &
			      conn->capable;
	} else {
		cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
		conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	}
	return NULL;
}

const struct fuse_operations model_ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.releasedir = fs_releasedir,
	.open = fs_open,
	.create = fs_create,
	.release = fs_release,
	.read = fs_read,
	.write = fs_write,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.link = fs_link,
	.rename = fs_rename,
	.chmod = fs_chmod,
	.chown = fs_chown,
	.truncate = fs_truncate,
	.utimens = fs_utimens,
	.statfs = fs_statfs,
};

const char model_name[] = "netfs";
const char model_usage[] =
	"usage: netfs [--latency=MS (2.0)] [--service=MS (0.05)] [--slots=N (16)]\n"
	"             [--cache=nfs|none] SOURCE MOUNTPOINT [FUSE options]\n"
	"Serves SOURCE at MOUNTPOINT, each request answered after the round trip;\n"
	"MOUNTPOINT/.netfs has the counters.  See bench/netfs/README.md.\n";

int model_option(int opt, const char *arg)
{
	switch (opt) {
	case 'l': m.latency = fm_number("latency", arg, 0) / 1e3; break;
	case 's': m.service = fm_number("service", arg, 0) / 1e3; break;
	case 'n': m.slots = (unsigned)fm_number("slots", arg, 1); break;
	case 'c':
		if (strcmp(arg, "nfs") == 0)
			m.cache = 1;
		else if (strcmp(arg, "none") == 0)
			m.cache = 0;
		else
			return -1;
		break;
	default: return -1;
	}
	return 0;
}

int model_start(const char *source)
{
	static char threads[64];

	if (m.slots > 4096)
		fm_usage(2);
	src_fd = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src_fd < 0) {
		fprintf(stderr, "netfs: %s: %s\n", source, strerror(errno));
		return 1;
	}
	/* Threads for every slot and the requests waiting for one, so that
	 * the slots are the limit. */
	snprintf(threads, sizeof threads, "max_threads=%u,max_idle_threads=%u",
		 m.slots * 2 + 16, m.slots * 2 + 16);
	fm_fuse_arg("-o");
	fm_fuse_arg(threads);
	return 0;
}

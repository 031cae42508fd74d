/* foreign_dino: a file system whose readdir d_ino is not stat's inode
 * number, without FUSE.  sshfs without -o use_ino lists every entry as
 * 0xffffffff (libfuse's FUSE_UNKNOWN_INO) and stats it as its node id;
 * the engine took that for a swap and removed no directory (issue 19).
 * This binary stands in for such a file system on any local one: it
 * interposes the getdents64 the engine makes through syscall(), putting
 * 0xffffffff in every d_ino, and its fstatfs(), answering FUSE's f_type
 * (fake_fs).  Pinned:
 *   - a tree given with those numbers (as rsync passes its readdir's) is
 *     removed whole, threaded, ordered, dry, and short of fds
 *     (directories closed and reopened through "..");
 *   - a directory swapped, just before the engine opens it, for one
 *     outside the tree (renameat2 RENAME_EXCHANGE from the fault hook) is
 *     still not entered: the outside one keeps every entry;
 *   - a same-device bind mount in such a tree is kept (as root), and
 *     where statx has no mount-root attribute (Linux before 5.8, stood
 *     in for by interposing statx) its directories are all refused;
 *   - where the file system is not one of those (real f_type), a d_ino
 *     that is not stat's is still refused as a swap.
 * The portable build (readdir, no f_type) runs the last case alone. */
#include "tutil.h"
#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define FUSE_SUPER_MAGIC	0x65735546L
#define FUSE_UNKNOWN_INO	0xffffffffULL

static int fake_fs;		/* set while no engine thread runs */
#ifndef DE_PORTABLE
static int hide_mount_root;	/* statx as before Linux 5.8 (same) */
#endif
static int g_dfd;
#ifndef DE_PORTABLE
static atomic_int swapped;
#endif

struct dirent64_hdr {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
};

/* The engine's only syscall() is getdents64 (sys.c). */
long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_getdents64) {
		long n = getdents64((int)a[0], (void *)a[1], (size_t)a[2]);
		long off;

		for (off = 0; n > 0 && off < n;) {
			struct dirent64_hdr *d = (void *)((char *)a[1] + off);

			d->d_ino = FUSE_UNKNOWN_INO;
			off += d->d_reclen;
		}
		return n;
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int fstatfs(int fd, struct statfs *sf)
{
	static int (*real)(int, struct statfs *);
	int rc;

	if (!real)
		real = (int (*)(int, struct statfs *))dlsym(RTLD_NEXT,
							    "fstatfs");
	rc = real(fd, sf);
	if (rc == 0 && fake_fs)
		sf->f_type = FUSE_SUPER_MAGIC;
	return rc;
}

#ifndef DE_PORTABLE
int statx(int dfd, const char *path, int flags, unsigned mask,
	  struct statx *sx)
{
	static int (*real)(int, const char *, int, unsigned, struct statx *);
	int rc;

	if (!real)
		real = (int (*)(int, const char *, int, unsigned,
				struct statx *))dlsym(RTLD_NEXT, "statx");
	rc = real(dfd, path, flags, mask, sx);
	if (rc == 0 && hide_mount_root)
		sx->stx_attributes_mask &= ~(uint64_t)STATX_ATTR_MOUNT_ROOT;
	return rc;
}

/* Fault hook: swap tree/a/victim with outside/decoy, once, right before
 * the engine opens victim (after the lstat that stands in for d_ino). */
static int swap_hook(void *arg, int op, const char *name)
{
	(void)arg;
	if (op == DE_OP_OPEN && !strcmp(name, "victim") &&
	    !atomic_exchange(&swapped, 1))
		syscall(SYS_renameat2, g_dfd, "tree/a/victim", g_dfd,
			"outside/decoy", RENAME_EXCHANGE);
	return 0;
}
#endif

/* tree/{m, a/victim, f}: the targets m, a and f (run()). */
static int build(int dfd)
{
	if (mkdirat(dfd, "tree", 0755) || t_mixed(dfd, "tree/m", 2, 3) ||
	    mkdirat(dfd, "tree/a", 0755) ||
	    t_mixed(dfd, "tree/a/victim", 1, 2) || t_file(dfd, "tree/f"))
		return -1;
	return 0;
}

/* Remove tree's entries as rsync gives them: d_type and a d_ino of
 * 0xffffffff.  Returns de_remove's value. */
static int run(int dfd, unsigned threads, unsigned flags,
	       int (*hook)(void *, int, const char *), struct de_summary *sum)
{
	struct de_config cfg = { .threads = threads, .flags = flags,
				 .max_delete = -1 };
	struct de_target t[] = {
		{ "m", DE_T_DIR, FUSE_UNKNOWN_INO },
		{ "a", DE_T_DIR, FUSE_UNKNOWN_INO },
		{ "f", DE_T_FILE, FUSE_UNKNOWN_INO },
	};
	de_ctx *ctx;
	int tfd, rc;

	tfd = openat(dfd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return -errno;
	rc = de_test_ctx_new(&ctx, &cfg, hook, NULL);
	if (rc == 0) {
		rc = de_remove(ctx, tfd, t, 3, NULL, NULL, sum);
		de_ctx_free(ctx);
	}
	close(tfd);
	return rc;
}

#ifndef DE_PORTABLE
/* The cases where d_ino is not stat's (fake_fs).  Returns T_PASS or
 * T_FAIL. */
static int fake_fuse_cases(int dfd)
{
	static const struct { unsigned threads, flags; } modes[] = {
		{ 1, 0 }, { 4, 0 }, { 4, DE_F_ORDERED }, { 2, DE_F_DRY_RUN },
	};
	struct de_summary sum;
	struct rlimit old, rl;
	int ret = T_FAIL, rc, i, fd, lim = 0, bound = 0, hide;
	char bsrc[4200], bind[4200];
	long decoy;

	/* Removed whole where d_ino is not stat's, in every mode. */
	fake_fs = 1;
	for (i = 0; i < (int)(sizeof(modes) / sizeof(modes[0])); i++) {
		CHECK(build(dfd) == 0);
		rc = run(dfd, modes[i].threads, modes[i].flags, NULL, &sum);
		fprintf(stderr, "mode %d: rc %d, removed %llu, failed %llu\n",
			i, rc, (unsigned long long)sum.removed_total,
			(unsigned long long)sum.failed);
		CHECK(rc == 0 && sum.failed == 0);
		if (modes[i].flags & DE_F_DRY_RUN)
			CHECK(t_count(dfd, "tree") > 1);
		else
			CHECK(t_count(dfd, "tree") == 1);
		t_cleanup_sub(dfd, "tree");
	}

	/* Short of fds: a chain of 150 directories under a limit of 24, so
	 * held fds are closed and reopened (through ".."). */
	fd = t_dir(dfd, "tree");
	CHECK(fd >= 0);
	for (i = 0; i < 150 && fd >= 0; i++) {
		int c;

		CHECK(t_file(fd, "f") == 0);
		c = t_dir(fd, i ? "d" : "m");
		close(fd);
		fd = c;
	}
	CHECK(fd >= 0);
	close(fd);
	CHECK((fd = t_dir(dfd, "tree/a")) >= 0);
	close(fd);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	rl = old;
	rl.rlim_cur = 24;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	lim = 1;
	rc = run(dfd, 4, 0, NULL, &sum);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	lim = 0;
	fprintf(stderr, "fds: rc %d, failed %llu\n", rc,
		(unsigned long long)sum.failed);
	CHECK(rc == 0 && t_count(dfd, "tree") == 1);
	t_cleanup_sub(dfd, "tree");

	/* A directory swapped from outside just before the open is refused,
	 * and the outside one keeps everything. */
	CHECK(build(dfd) == 0);
	CHECK((fd = t_dir(dfd, "outside")) >= 0);
	CHECK(t_mixed(fd, "decoy", 1, 3) == 0);
	close(fd);
	decoy = t_count(dfd, "outside/decoy");
	rc = run(dfd, 2, 0, swap_hook, &sum);
	fprintf(stderr, "swap: rc %d, swapped %d, failed %llu\n", rc,
		atomic_load(&swapped), (unsigned long long)sum.failed);
	CHECK(atomic_load(&swapped) == 1);
	CHECK(rc == -EIO && sum.failed == 1);
	/* The decoy now sits at tree/a/victim, untouched. */
	CHECK(t_count(dfd, "tree/a/victim") == decoy);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "outside");

	/* A same-device bind mount in the tree (root only) is kept, though
	 * the lstat crosses it as the open does: STATX_ATTR_MOUNT_ROOT.
	 * Where statx cannot tell (Linux before 5.8: hide_mount_root), every
	 * directory whose d_ino differs is refused, the bind mount too.
	 * That case first. */
	snprintf(bsrc, sizeof(bsrc), "%s/bsrc", t_base);
	snprintf(bind, sizeof(bind), "%s/tree/a/bind", t_base);
	for (hide = 1; hide >= 0; hide--) {
		CHECK(build(dfd) == 0);
		CHECK(mkdirat(dfd, "tree/a/bind", 0755) == 0);
		CHECK(t_mixed(dfd, "bsrc", 1, 2) == 0);
		decoy = t_count(dfd, "bsrc");
		bound = geteuid() == 0 &&
			mount(bsrc, bind, NULL, MS_BIND, NULL) == 0;
		hide_mount_root = hide;
		rc = run(dfd, 2, 0, NULL, &sum);
		hide_mount_root = 0;
		fprintf(stderr, "bind (%s%s): rc %d, mounts %llu, failed "
			"%llu\n", bound ? "mounted" : "not root",
			hide ? ", no mount-root attribute" : "", rc,
			(unsigned long long)sum.mounts,
			(unsigned long long)sum.failed);
		if (hide) {
			CHECK(rc == -EIO && sum.failed == 2);
		} else {
			CHECK(rc == 0 && sum.failed == 0 &&
			      sum.mounts == (uint64_t)bound);
		}
		CHECK(t_count(dfd, "bsrc") == decoy);
		if (bound) {
			CHECK(umount2(bind, MNT_DETACH) == 0);
			bound = 0;
		}
		t_cleanup_sub(dfd, "tree");
		t_cleanup_sub(dfd, "bsrc");
	}
	ret = T_PASS;
out:
	if (lim)
		setrlimit(RLIMIT_NOFILE, &old);
	if (bound && umount2(bind, MNT_DETACH))
		fprintf(stderr, "umount %s failed\n", bind);
	fake_fs = 0;
	return ret;
}
#endif

int test(int dfd)
{
	struct de_summary sum;
	int ret = T_FAIL, rc;

	g_dfd = dfd;
#ifndef DE_PORTABLE
	CHECK(fake_fuse_cases(dfd) == T_PASS);
#endif

	/* Not such a file system: the d_ino check stands.  (The portable
	 * build, which knows no f_type, runs this case alone: it trusts
	 * d_ino everywhere, and there that check is also its only catch of
	 * a same-device bind mount.) */
	fake_fs = 0;
	CHECK(build(dfd) == 0);
	rc = run(dfd, 2, 0, NULL, &sum);
	fprintf(stderr, "real f_type: rc %d, failed %llu\n", rc,
		(unsigned long long)sum.failed);
	CHECK(rc == -EIO && sum.failed == 2);
	CHECK(t_exists(dfd, "tree/m") && t_exists(dfd, "tree/a/victim"));
	ret = T_PASS;
out:
	return ret;
}

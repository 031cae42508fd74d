/*
 * list_ahead: de_dir_ahead() asks the block device's cache for a large
 * directory's blocks before its caller lists it (rsync's listing of the
 * seeds' one directory of a million files).  What that saves is measured
 * on the disk model (docs/BENCHMARKS.md, "A million files in one
 * directory"); this pins what is asked for, and when not.
 *
 * On a loop-mounted ext4 (exit 77 without root or mkfs.ext4): big/, a
 * directory of 3,000 names (some 40 blocks), and small/, of 10.  After
 * the device's cache is emptied (POSIX_FADV_DONTNEED on the device, the
 * file system synced), mincore() on the device tells which of a
 * directory's blocks are in it (it sees what was read through the
 * device, not ext4's own reads of its buffers, which share the cache):
 *   - big/: all of them once de_dir_ahead() returns, and the fault hook
 *     saw DE_OP_AHEAD (".") once;
 *   - small/: nothing asked, no DE_OP_AHEAD;
 *   - big/ with the hook failing DE_OP_AHEAD: nothing asked;
 *   - big/ on a device whose reads told a fast disk (de_note_read()):
 *     nothing asked, no DE_OP_AHEAD;
 *   - no context, a file's descriptor: nothing, no crash.
 * The portable build knows no file system (policy.c): nothing is asked.
 */
#include "tutil.h"

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#define NBIG	3000

static int calls, refuse;

static int hook(void *arg, int op, const char *name)
{
	(void)arg;
	if (op != DE_OP_AHEAD || strcmp(name, "."))
		return 0;
	calls++;
	return refuse ? EIO : 0;
}

/* The block device under fd's file system, read-only, or -1. */
static int open_dev(int fd)
{
	char path[128], line[128], dev[160] = "";
	struct stat st;
	FILE *f;

	if (fstat(fd, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 major(st.st_dev), minor(st.st_dev));
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "DEVNAME=", 8)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(dev, sizeof(dev), "/dev/%s", line + 8);
		}
	fclose(f);
	return dev[0] ? open(dev, O_RDONLY | O_CLOEXEC) : -1;
}

/* Of the blocks at..at+len of bdev, how many are in its cache; -1 on
 * failure. */
static long cached_at(int bdev, uint64_t at, uint64_t len)
{
	long page = sysconf(_SC_PAGESIZE), n = 0;
	off_t off = (off_t)(at / (uint64_t)page * (uint64_t)page);
	size_t size = (size_t)(at + len - (uint64_t)off), i;
	unsigned char *v = malloc((size + (size_t)page - 1) / (size_t)page);
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, bdev, off);

	if (m == MAP_FAILED || !v || mincore(m, size, v))
		n = -1;
	for (i = 0; n >= 0 && i < (size + (size_t)page - 1) / (size_t)page;
	     i++)
		n += v[i] & 1;
	if (m != MAP_FAILED)
		munmap(m, size);
	free(v);
	return n;
}

/* Of directory fd's blocks (*total of them), how many are in bdev's
 * cache; -1 on failure. */
static long cached(int fd, int bdev, long *total)
{
	union {
		struct fiemap fm;
		char b[sizeof(struct fiemap) + 8 * sizeof(struct fiemap_extent)];
	} u;
	long n = 0, k;
	unsigned j;

	*total = 0;
	memset(&u, 0, sizeof(u));
	u.fm.fm_length = FIEMAP_MAX_OFFSET;
	u.fm.fm_extent_count = 8;
	if (ioctl(fd, FS_IOC_FIEMAP, &u.fm) || !u.fm.fm_mapped_extents)
		return -1;
	for (j = 0; j < u.fm.fm_mapped_extents; j++) {
		k = cached_at(bdev, u.fm.fm_extents[j].fe_physical,
			      u.fm.fm_extents[j].fe_length);
		if (k < 0)
			return -1;
		n += k;
		*total += (long)((u.fm.fm_extents[j].fe_length + 4095) / 4096);
	}
	return n;
}

/* Empty bdev's cache of what the file system does not hold. */
static void drop(int wd, int bdev)
{
	syncfs(wd);
	(void)posix_fadvise(bdev, 0, 0, POSIX_FADV_DONTNEED);
}

/* de_dir_ahead() on name in wd, with a fresh context (fast: its device's
 * reads told a fast disk first); the blocks of name then cached, once
 * the reads asked are done (mincore() sees a block once read: within 5
 * s, or 0.2 s where nothing shows), or -1. */
static long ahead(int wd, int bdev, const char *name, int fast)
{
	struct de_config cfg = { .threads = 1, .max_delete = -1 };
	de_ctx *ctx;
	long n = -1, total;
	int fd = openat(wd, name, O_RDONLY | O_DIRECTORY);
	int i;

	if (fd < 0 || de_test_ctx_new(&ctx, &cfg, hook, NULL)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (i = 0; fast && i < 8; i++)
		de_note_read(ctx, fd, 1000, 100);
	drop(wd, bdev);
	calls = 0;
	de_dir_ahead(ctx, fd);
	for (i = 0; i < 250; i++) {
		n = cached(fd, bdev, &total);
		if (n < 0 || n == total || (n == 0 && i == 10))
			break;
		usleep(20000);
	}
	de_ctx_free(ctx);
	close(fd);
	return n;
}

int test(int dfd)
{
	int ret = T_FAIL, wd, bdev = -1, i, fd;
	long all, before;
	char path[96];

	(void)dfd;	/* the directories go on the ext4, in the temp dir's mnt */
	wd = t_loop_mount("64M", "mkfs.ext4 -q -F -b 4096");
	if (wd < 0) {
		ret = T_SKIP;
		goto out;
	}
	CHECK(t_paths(wd, "big/", "small/", NULL) == 0);
	for (i = 0; i < NBIG; i++) {
		snprintf(path, sizeof(path), "big/a-name-long-enough-%06d", i);
		CHECK(t_file(wd, path) == 0);
	}
	for (i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "small/f%d", i);
		CHECK(t_file(wd, path) == 0);
	}
	/* What ext4 holds of a block (its buffers) readahead skips, and no
	 * advice drops: start from an empty cache. */
	CHECK((wd = t_remount(wd)) >= 0);
	CHECK((bdev = open_dev(wd)) >= 0);
	fd = openat(wd, "big", O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0);
	drop(wd, bdev);
	before = cached(fd, bdev, &all);
	close(fd);
	fprintf(stderr, "big/: %ld blocks, %ld cached after the drop\n", all,
		before);
	CHECK(all >= 16 && before >= 0 && before < all / 2);

#ifdef DE_PORTABLE
	/* No file system is known there (policy.c): nothing is asked. */
	CHECK(ahead(wd, bdev, "big", 0) < all / 2);
	CHECK(calls == 0);
#else
	CHECK(ahead(wd, bdev, "big", 0) == all);
	CHECK(calls == 1);
#endif
	CHECK(ahead(wd, bdev, "small", 0) >= 0);
	CHECK(calls == 0);
	refuse = 1;
	CHECK(ahead(wd, bdev, "big", 0) < all / 2);
#ifndef DE_PORTABLE
	CHECK(calls == 1);
#endif
	refuse = 0;
	CHECK(ahead(wd, bdev, "big", 1) < all / 2);
	CHECK(calls == 0);

	fd = openat(wd, "small/f0", O_RDONLY);
	CHECK(fd >= 0);
	de_dir_ahead(NULL, fd);
	close(fd);
	ret = T_PASS;
out:
	if (bdev >= 0)
		close(bdev);
	t_umount(wd);
	return ret;
}

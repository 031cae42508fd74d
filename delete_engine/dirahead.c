/*
 * dirahead.c - the global schedule's next directories, read ahead in a
 * few long requests through the block device.
 *
 * ext4 reads an indexed directory (htree: any of more than one block)
 * one 4 KiB block at a time as getdents() walks its hash order, each
 * block a request of its own, and does no read-ahead for it.  In a tree
 * whose directories grew together, their blocks lie interleaved over one
 * area of the disk, so reading them one by one is a rotation a block on
 * a rotating disk: a sixth of the million-file tree's time on the hdd
 * model, 41 of 264 model-seconds (bench/results/2026-12-07/NOTES.md,
 * "Reading the directories ahead").
 *
 * Before the reader reads on (global.c read_window), the directories next
 * on its stack, as many blocks as it is about to read, are mapped
 * (FS_IOC_FIEMAP on each, opened from its parent with O_NOFOLLOW), their
 * extents sorted and joined across gaps of up to DE__AHEAD_GAP blocks,
 * and each joined range asked of the block device's page cache with
 * POSIX_FADV_WILLNEED, in pieces of DE__AHEAD_CHUNK blocks (the kernel
 * reads at most its read-ahead size of one request).  That cache is the
 * one ext4 keeps its metadata buffers in, so the reads that follow find
 * their blocks there.
 *
 * Nothing here changes anything: the device is opened read-only, a
 * directory that moved or is not one is only mapped where it now is (or
 * not at all), and any failure (no such device node, not root, no
 * FIEMAP) leaves the reads as they were.  The fault hook sees each
 * directory mapped (DE_OP_AHEAD), not the calls.  Only where the window
 * fills (ext4 with a journal, on a device not known to read fast:
 * policy.c de__want_fill), where the root's st_dev is a block device
 * this process may read, and not while DE_SCHED_AUTO's probe times the
 * first reads (read ahead, a slow disk would look fast).
 *
 * de_dir_ahead() does the same for a directory its caller lists whole,
 * the seeds' case of one directory of a million files (rsync lists it).
 */
#include "internal.h"

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DE__AHEAD_EXTENTS	64	/* mapped of each directory */

struct extent {
	uint64_t at, len;		/* in 4 KiB blocks */
};

/* See global.h. */
int de__open_bdev(dev_t dev)
{
	char path[300], line[256];
	struct stat st;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 major(dev), minor(dev));
	f = fopen(path, "re");
	if (!f)
		return -1;
	path[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "DEVNAME=", 8)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof(path), "/dev/%s", line + 8);
		}
	fclose(f);
	if (!path[0])
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISBLK(st.st_mode) ||
			st.st_rdev != dev)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* See global.h. */
void de__ahead_start(de_ctx *ctx, struct de__global *g)
{
	g->bdev = g->fill && ctx->global_fill != 2 ? de__open_bdev(g->dev) : -1;
}

/* See global.h. */
void de__ahead_end(struct de__global *g)
{
	if (g->bdev >= 0)
		close(g->bdev);
	g->bdev = -1;
}

/* Append fd's extents from its start, DE__AHEAD_EXTENTS at most, to
 * *x; the blocks mapped, 0 if none. */
static uint64_t map_fd(int fd, struct extent *x, size_t *nx, size_t cap)
{
	union {
		struct fiemap fm;
		char b[sizeof(struct fiemap) +
		       DE__AHEAD_EXTENTS * sizeof(struct fiemap_extent)];
	} u;
	uint64_t got = 0;
	unsigned j;

	memset(&u, 0, sizeof(u));
	u.fm.fm_length = FIEMAP_MAX_OFFSET;
	u.fm.fm_extent_count = DE__AHEAD_EXTENTS;
	if (ioctl(fd, FS_IOC_FIEMAP, &u.fm) == 0)
		for (j = 0; j < u.fm.fm_mapped_extents && *nx < cap; j++) {
			const struct fiemap_extent *e = &u.fm.fm_extents[j];

			x[*nx].at = e->fe_physical / 4096;
			x[*nx].len = (e->fe_physical + e->fe_length + 4095) /
				     4096 - x[*nx].at;
			got += x[(*nx)++].len;
		}
	return got;
}

/* Append the extents of directory n (its parent's pin, then its name)
 * to *x; the blocks mapped, 0 if none. */
static uint64_t map_dir(de_ctx *ctx, struct de__node *n, struct extent *x,
			size_t *nx, size_t cap)
{
	struct de__pin pin;
	uint64_t got;
	int fd;

	if (de__fault(ctx, DE_OP_AHEAD, n->name))
		return 0;
	pin = de__pin_take(ctx, n->parent, -1);
	if (!pin.n)
		return 0;
	fd = openat(pin.fd, n->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	de__pin_drop(ctx, &pin);
	if (fd < 0)
		return 0;
	got = map_fd(fd, x, nx, cap);
	close(fd);
	return got;
}

static int by_at(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* Ask bdev's cache for blocks at to end, in pieces. */
static void ask(int bdev, uint64_t at, uint64_t end)
{
	for (; at < end; at += DE__AHEAD_CHUNK) {
		uint64_t n = end - at < DE__AHEAD_CHUNK ? end - at :
			     DE__AHEAD_CHUNK;

		(void)posix_fadvise(bdev, (off_t)(at * 4096),
				    (off_t)(n * 4096), POSIX_FADV_WILLNEED);
	}
}

/* Ask bdev's cache for the extents x[0..nx), in the disk's order, each
 * range joined across gaps of up to DE__AHEAD_GAP blocks. */
static void ask_extents(int bdev, struct extent *x, size_t nx)
{
	size_t i, j;

	qsort(x, nx, sizeof(*x), by_at);
	for (i = 0; i < nx; i = j) {
		uint64_t end = x[i].at + x[i].len;

		for (j = i + 1; j < nx && x[j].at <= end + DE__AHEAD_GAP; j++)
			if (x[j].at + x[j].len > end)
				end = x[j].at + x[j].len;
		ask(bdev, x[i].at, end);
	}
}

/* See global.h. */
void de__ahead(de_ctx *ctx, struct de__global *g, size_t upto)
{
	size_t i, nx = 0, want = upto > g->blocks ? upto - g->blocks : 0;
	size_t cap;
	struct extent *x;
	uint64_t got = 0;

	/* A window's blocks at least, however much of it is read. */
	if (want < upto / (1 + DE__FILL_AHEAD))
		want = upto / (1 + DE__FILL_AHEAD);
	cap = 2 * want + DE__AHEAD_EXTENTS;
	/* Nothing while the probe times the first reads (global.c). */
	if (g->bdev < 0 || g->probing > 0 || !want ||
	    !(x = malloc(cap * sizeof(*x))))
		return;
	g->ahead = 0;
	/* The stack's top is read next; a leave mark (low bit) is no
	 * directory. */
	for (i = g->nstack; i-- > 0 && got < want &&
	     nx + DE__AHEAD_EXTENTS <= cap;) {
		struct de__node *n = g->stack[i];

		if (!((uintptr_t)n & 1) && n->parent) {
			got += map_dir(ctx, n, x, &nx, cap);
			g->ahead++;
		}
	}
	ask_extents(g->bdev, x, nx);
	free(x);
}

/* See delete_engine.h. */
void de_dir_ahead(de_ctx *ctx, int dirfd)
{
	struct extent x[DE__AHEAD_EXTENTS];
	struct stat st;
	size_t nx = 0;
	int bdev;

	if (!ctx || fstat(dirfd, &st) || !S_ISDIR(st.st_mode) ||
	    st.st_size < (off_t)DE__DIR_AHEAD_MIN * 4096 ||
	    !de__want_dir_ahead(ctx, de__fs_type(dirfd), st.st_dev) ||
	    de__fault(ctx, DE_OP_AHEAD, "."))
		return;
	if ((bdev = de__open_bdev(st.st_dev)) < 0)
		return;
	if (map_fd(dirfd, x, &nx, DE__AHEAD_EXTENTS))
		ask_extents(bdev, x, nx);
	close(bdev);
}

/*
 * push.c - the inode tables, written home behind the order.
 *
 * Where the holes of an inode order are filled (global.c, unlink.c: a
 * slow disk under ext4's journal), or an ordered run's batches go on such
 * a disk (batch.c), the order sweeps the inode tables from low to high,
 * and each transaction the journal commits leaves a long run of them
 * dirty behind the sweep.  ext4 writes them home only when the
 * journal wants their room back: the deleting thread then waits in jbd2's
 * checkpoint while the oldest transaction's blocks go home a batch at a
 * time, between the journal's own writes (fs/jbd2/checkpoint.c), and the
 * disk idles while the thread unlinks.  Here a thread of the run's asks
 * the block device's cache, every DE__PUSH_MS, to start writing the inode
 * tables' dirty blocks (sync_file_range(SYNC_FILE_RANGE_WRITE) on their
 * extents, as FS_IOC_GETFSMAP names them): long requests in the disk's
 * order while the deleting thread goes on, and the checkpoint finds them
 * written.  Why this period, and what it saves: tunables.h DE__PUSH_MS.
 *
 * Only the inode tables: a window's directory blocks are logged again by
 * each transaction, and written home between two of them they would be
 * written again and again (the kernel's periodic write-back does that:
 * bench/results/2026-12-06/NOTES.md, "The flusher").  Not in a paced run:
 * its writes keep the kernel's own timing, which the pacer measures.
 *
 * Nothing here changes anything: the kernel writes what it would have
 * written later, and a block still in a running transaction is not dirty
 * to the cache (jbd2 holds it), so it is not written.  Any failure (not
 * root: GETFSMAP needs CAP_SYS_ADMIN; a file system without it; no device
 * node; no thread) leaves the writes as they were, and so does a run
 * short of fds: the device's is held for the call, and directories need
 * them more.  An order of fewer than DE__PUSH_MIN_FILES files starts
 * nothing (a sync's deletions, a few in each directory).  The thread blocks all signals, and is joined before the
 * call returns (the caller may fork).
 */
#include "internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/fsmap.h>
#endif

/* The owner GETFSMAP gives ext4's inode tables (fs/ext4/fsmap.h), the
 * one xfs gives its inode chunks. */
#define DE__OWN_INODES	FMR_OWNER('X', 5)

struct de__push {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* on CLOCK_MONOTONIC */
	int stop;			/* mu */
	int bdev;
	int fs;				/* a directory to map, the thread's */
	size_t nx;			/* the thread's */
	struct de__span {
		uint64_t at, len;	/* bytes */
	} x[];
};

#ifdef FS_IOC_GETFSMAP
/* The first (at most) DE__PUSH_SPANS inode-table extents of fd's file
 * system in *x, adjacent ones joined; how many, 0 if none. */
static size_t map_tables(int fd, struct de__span *x)
{
	enum { RECS = 128 };
	struct fsmap_head *h = calloc(1, sizeof(*h) + RECS * sizeof(h->fmh_recs[0]));
	size_t nx = 0;
	unsigned i;

	if (!h)
		return 0;
	/* The high key: all ones, but for what must be zero. */
	h->fmh_keys[1].fmr_device = UINT32_MAX;
	h->fmh_keys[1].fmr_flags = UINT32_MAX;
	h->fmh_keys[1].fmr_physical = UINT64_MAX;
	h->fmh_keys[1].fmr_owner = UINT64_MAX;
	h->fmh_keys[1].fmr_offset = UINT64_MAX;
	h->fmh_keys[1].fmr_length = UINT64_MAX;
	for (;;) {
		h->fmh_count = RECS;
		if (ioctl(fd, FS_IOC_GETFSMAP, h) || !h->fmh_entries)
			break;
		for (i = 0; i < h->fmh_entries; i++) {
			const struct fsmap *r = &h->fmh_recs[i];

			if (!(r->fmr_flags & FMR_OF_SPECIAL_OWNER) ||
			    r->fmr_owner != DE__OWN_INODES)
				continue;
			if (nx && x[nx - 1].at + x[nx - 1].len == r->fmr_physical)
				x[nx - 1].len += r->fmr_length;
			else if (nx < DE__PUSH_SPANS)
				x[nx++] = (struct de__span){ r->fmr_physical,
							     r->fmr_length };
		}
		if (h->fmh_recs[h->fmh_entries - 1].fmr_flags & FMR_OF_LAST)
			break;
		h->fmh_keys[0] = h->fmh_recs[h->fmh_entries - 1];
	}
	free(h);
	return nx;
}
#else
static size_t map_tables(int fd, struct de__span *x)
{
	(void)fd;
	(void)x;
	return 0;
}
#endif

/* Map the tables, then every DE__PUSH_MS until told to stop, ask for
 * their write-back.  The map is made here, not by the deleting thread:
 * ext4 answers GETFSMAP from every group's block bitmap (on a 1 TiB file
 * system on the hdd model, cold, 693 reads and 3.1 s). */
static void *pusher(void *arg)
{
	struct de__push *p = arg;
	struct timespec at;
	size_t i;

	p->nx = map_tables(p->fs, p->x);
	close(p->fs);
	p->fs = -1;
	clock_gettime(CLOCK_MONOTONIC, &at);
	pthread_mutex_lock(&p->mu);
	while (!p->stop && p->nx) {
		at.tv_nsec += DE__PUSH_MS * 1000000L;
		at.tv_sec += at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		if (pthread_cond_timedwait(&p->cv, &p->mu, &at) == 0 || p->stop)
			continue;
		pthread_mutex_unlock(&p->mu);
		for (i = 0; i < p->nx; i++)
			(void)sync_file_range(p->bdev, (off_t)p->x[i].at,
					      (off_t)p->x[i].len,
					      SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* p's thread started, all signals blocked in it (as pool.c's); 0 or -1. */
static int start(struct de__push *p)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int e;

	if (pthread_condattr_init(&ca))
		return -1;
	e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
	    pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (e)
		return -1;
	if (pthread_mutex_init(&p->mu, NULL)) {
		pthread_cond_destroy(&p->cv);
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&p->tid, NULL, pusher, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		return -1;
	}
	return 0;
}

/* See global.h. */
void de__push_start(de_ctx *ctx, size_t files)
{
	struct de__push *p;
	struct de__pin pin;
	struct stat st;
	int fd;

	if (files < DE__PUSH_MIN_FILES || ctx->cfg.rate ||
	    ctx->fd_budget < (int)DE__PUSH_MIN_FDS || !ctx->run.root)
		return;
	/* Tried once a call, whatever comes of it; a worker's huge
	 * directory may be first (unlink.c). */
	de__lock(ctx);
	p = ctx->push ? NULL :
	    malloc(sizeof(*p) + DE__PUSH_SPANS * sizeof(p->x[0]));
	if (p) {
		ctx->push = p;
		p->bdev = -1;
		p->fs = -1;
		p->stop = 0;
		p->nx = 0;
	}
	de__unlock(ctx);
	if (!p || de__fault(ctx, DE_OP_PUSH, "."))
		return;
	pin = de__pin_take(ctx, ctx->run.root, -1);
	if (!pin.n)
		return;
	/* The root's fd may be an O_PATH one (rsync's), which takes no
	 * ioctl. */
	fd = openat(pin.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	de__pin_drop(ctx, &pin);
	if (fd < 0)
		return;
	if (!fstat(fd, &st))
		p->bdev = de__open_bdev(st.st_dev);
	p->fs = fd;
	if (p->bdev >= 0 && start(p)) {
		close(p->bdev);
		p->bdev = -1;
	}
	if (p->bdev < 0)
		close(fd);
}

/* See global.h.  The workers are idle (run.c end_run). */
void de__push_end(de_ctx *ctx)
{
	struct de__push *p = ctx->push;

	if (!p)
		return;
	if (p->bdev >= 0) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->tid, NULL);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		close(p->bdev);
	}
	free(p);
	ctx->push = NULL;
}

/*
 * pace.c - removing entries politely: rate limits, stepwise freeing of
 * big files, and syncing as the deletion goes.
 *
 * Every unlinkat() or rmdir of the engine goes through de__pace_unlink(),
 * which makes the removal itself and, as de_config asks:
 *
 *  - rate: caps the entries removed per second, over all workers
 *    together.  It hands out start times 1 / rate apart: a worker takes
 *    the next free slot under the lock and sleeps until it outside the
 *    lock, so N workers together still make at most rate removals in any
 *    second, and a run of n entries takes at least (n - 1) / rate
 *    seconds, which bounds how long a polite delete can last.  No slots
 *    are banked while nothing is removed (a slot in the past is moved up
 *    to now), so an idle spell is not followed by a burst.  With
 *    rate_burst B, the slots are B / rate apart and B removals share
 *    each, back to back: n entries take at least (ceil(n / B) - 1) * B /
 *    rate seconds.  Bursts are what ext4 next to a syncing writer wants:
 *    every journal commit writes each metadata block (bitmaps, group
 *    descriptors, inode table and directory blocks) the removals since
 *    the last commit touched, so removals spread evenly over many
 *    commits write the same blocks over and over.
 *
 *  - rate_bytes: the same by freed space.  A regular file's unlink takes
 *    a slot whose length is its allocated size (st_blocks * 512, from one
 *    fstatat() before the unlink) / rate_bytes, so n bytes take at least
 *    (n - the last file's bytes) / rate_bytes seconds.  Directories,
 *    links and the like cost nothing here (rate covers them).
 *
 *  - trunc_step: a regular file bigger than this, with no other link,
 *    is opened, unlinked, and then shrunk trunc_step bytes at a time
 *    with ftruncate() (each step paced by rate_bytes) before the last
 *    close frees the rest.  Truncating only after the unlink succeeded
 *    means a file the deletion fails on is never damaged, and a file
 *    with other hard links is never truncated (st_nlink is checked on
 *    the open fd after the unlink).  A file that cannot be opened for
 *    writing is just unlinked.
 *
 *  - sync_every: after every sync_every successful removals (counted over
 *    the context's life, since rsync makes one de_remove() per directory)
 *    the worker that made the removal syncfs()es the file system and
 *    waits, then sleeps sync_backoff times as long as the syncfs took.
 *    The point is the file system's own write-back: on ext4 an unlink is
 *    quick, and the I/O it causes (the journal commit of the inode, the
 *    bitmaps and the directory block, and later the write-back of those
 *    blocks to their homes) happens in jbd2 and the flusher at their own
 *    pace, where no rate limit on unlinks reaches it.  Syncing makes
 *    that I/O happen now, in pieces of sync_every removals, on the
 *    deleter's time; the backoff keeps the deleter's share of the disk
 *    at most 1 / (1 + sync_backoff) however slow the disk is.
 *
 * Lock rules: pace_mu protects pace_next_ns, pace_burst_ns,
 * pace_burst_left and pace_bytes_ns only;
 * nothing else is taken while it is held, and nobody sleeps or makes a
 * syscall under it.  pace_removed is atomic.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

/* Longest single sleep between checks for cancellation. */
#define PACE_SLICE_NS 100000000u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep until the monotonic time until_ns, in slices, returning early
 * once the run is cancelled (work in flight finishes promptly). */
static void sleep_until(de_ctx *ctx, uint64_t until_ns)
{
	uint64_t now;
	struct timespec ts;

	while ((now = now_ns()) < until_ns && !de__cancelled(ctx)) {
		uint64_t d = until_ns - now;

		if (d > PACE_SLICE_NS)
			d = PACE_SLICE_NS;
		ts.tv_sec = (time_t)(d / 1000000000u);
		ts.tv_nsec = (long)(d % 1000000000u);
		nanosleep(&ts, NULL);
	}
}

void de__pace_init(de_ctx *ctx)
{
	pthread_mutex_init(&ctx->pace_mu, NULL);
	ctx->pace_next_ns = 0;
	ctx->pace_bytes_ns = 0;
	ctx->pace_removed = 0;
	ctx->pace_burst_left = 0;
	ctx->pace_burst_ns = 0;
	ctx->pace_gap_ns = ctx->cfg.rate ? 1000000000u / ctx->cfg.rate : 0;
	if (ctx->cfg.rate && !ctx->pace_gap_ns)
		ctx->pace_gap_ns = 1;
}

void de__pace_destroy(de_ctx *ctx)
{
	pthread_mutex_destroy(&ctx->pace_mu);
}

/* Nanoseconds that freeing bytes takes at rate_bytes (0 without it). */
static uint64_t bytes_ns(const de_ctx *ctx, unsigned long long bytes)
{
	unsigned long long r = ctx->cfg.rate_bytes;

	if (!r || !bytes)
		return 0;
	/* bytes * 1e9 / r without overflowing for files up to 16 EiB. */
	return (uint64_t)(bytes / r) * 1000000000u +
	       (uint64_t)((bytes % r) * 1000000000u / r);
}

/*
 * Wait for a slot: one entry (if entry, under rate) that frees bytes
 * (under rate_bytes).  Returns at once when neither limit applies.
 */
static void pace_wait(de_ctx *ctx, int entry, unsigned long long bytes)
{
	uint64_t now, slot, gap = entry ? ctx->pace_gap_ns : 0;
	uint64_t bgap = bytes_ns(ctx, bytes);

	if (!ctx->pace_gap_ns && !ctx->cfg.rate_bytes)
		return;
	now = now_ns();
	pthread_mutex_lock(&ctx->pace_mu);
	slot = now;
	if (ctx->cfg.rate_bytes && ctx->pace_bytes_ns > slot)
		slot = ctx->pace_bytes_ns;
	if (gap && ctx->pace_burst_left && ctx->pace_next_ns > now) {
		/* Inside a burst: right behind its start. */
		ctx->pace_burst_left--;
		if (ctx->pace_burst_ns > slot)
			slot = ctx->pace_burst_ns;
	} else if (gap) {
		/* A burst (of one, without rate_burst) starts at the next
		 * slot; the one after it is burst * gap later. */
		unsigned burst = ctx->cfg.rate_burst > 1 ? ctx->cfg.rate_burst : 1;

		if (ctx->pace_next_ns > slot)
			slot = ctx->pace_next_ns;
		ctx->pace_burst_ns = slot;
		ctx->pace_burst_left = burst - 1;
		ctx->pace_next_ns = slot + gap * burst;
	}
	if (ctx->cfg.rate_bytes)
		ctx->pace_bytes_ns = slot + bgap;
	pthread_mutex_unlock(&ctx->pace_mu);
	if (slot > now)
		sleep_until(ctx, slot);
}

/* A removal succeeded: every sync_every of them, sync the file system
 * under dfd and back off (see the top of the file). */
static void pace_done(de_ctx *ctx, int dfd, const char *name)
{
	uint64_t n, t0, took;

	if (!ctx->cfg.sync_every)
		return;
	n = __atomic_add_fetch(&ctx->pace_removed, 1, __ATOMIC_RELAXED);
	if (n % ctx->cfg.sync_every)
		return;
	if (de__fault(ctx, DE_OP_SYNC, name))
		return;
	t0 = now_ns();
#ifndef DE_PORTABLE
	(void)syncfs(dfd);
#else
	/* POSIX has no syncfs(); the directory's own fsync at least makes
	 * the removals durable, which on journalling file systems commits
	 * them. */
	(void)fsync(dfd);
#endif
	took = now_ns() - t0;
	if (ctx->cfg.sync_backoff)
		sleep_until(ctx, now_ns() + took * ctx->cfg.sync_backoff);
}

/*
 * Free an open, already unlinked regular file of size bytes and alloc
 * allocated bytes in trunc_step steps, each paced.  Closes fd.
 */
static void trunc_steps(de_ctx *ctx, int fd, const char *name, off_t size,
			unsigned long long alloc)
{
	unsigned long long step = ctx->cfg.trunc_step, cost;

	while ((unsigned long long)size > step) {
		if (de__fault(ctx, DE_OP_TRUNCATE, name))
			break;
		cost = alloc < step ? alloc : step;
		pace_wait(ctx, 0, cost);
		if (ftruncate(fd, size - (off_t)step))
			break;
		size -= (off_t)step;
		alloc -= cost;
	}
	pace_wait(ctx, 0, alloc);
	close(fd);
}

/*
 * Remove name under dfd (unlinkat with flags), paced as de_config asks.
 * Returns 0 or the negative errno of the removal; pacing, truncating and
 * syncing never fail it.
 */
int de__pace_unlink(de_ctx *ctx, int dfd, const char *name, int flags)
{
	struct stat sb, fb;
	unsigned long long alloc = 0;
	int fd = -1;

	if (!(flags & AT_REMOVEDIR) && (ctx->cfg.rate_bytes || ctx->cfg.trunc_step) &&
	    !fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) && S_ISREG(sb.st_mode)) {
		alloc = (unsigned long long)sb.st_blocks * 512u;
		if (ctx->cfg.trunc_step && sb.st_nlink == 1 &&
		    (unsigned long long)sb.st_size > ctx->cfg.trunc_step) {
			fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK |
				    O_NOCTTY | O_CLOEXEC);
			/* Only the file we stat()ed, and only a regular one. */
			if (fd >= 0 && (fstat(fd, &fb) || !S_ISREG(fb.st_mode) ||
					fb.st_dev != sb.st_dev || fb.st_ino != sb.st_ino)) {
				close(fd);
				fd = -1;
			}
		}
	}
	if (fd >= 0) {
		/* Unlink first: a failure leaves the file whole. */
		pace_wait(ctx, 1, 0);
		if (unlinkat(dfd, name, flags)) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (!fstat(fd, &fb) && fb.st_nlink == 0)
			trunc_steps(ctx, fd, name, fb.st_size, alloc);
		else
			close(fd);	/* linked again meanwhile: frees nothing */
	} else {
		pace_wait(ctx, 1, alloc);
		if (unlinkat(dfd, name, flags))
			return -errno;
	}
	pace_done(ctx, dfd, name);
	return 0;
}

/*
 * pace.c - a rate limit on removals, for deleting politely.
 *
 * de_config.rate caps the entries removed per second, over all workers
 * together.  Every unlinkat() or rmdir goes through de__pace() first,
 * and so does every entry handed to the dispose hook instead (rsync's
 * --backup renames, which cost the file system what an unlink does),
 * which hands out start times rate apart: a worker takes the next free
 * slot under the lock and sleeps until it outside the lock, so N workers
 * together still make at most rate removals in any second, and a run of
 * n entries takes at least (n - 1) / rate seconds, which bounds how long
 * a polite delete can last.  No slots are banked while nothing is
 * removed (a slot in the past is moved up to now), so an idle spell is
 * not followed by a burst.
 *
 * de_config.rate_burst B makes the slots B / rate apart and lets B
 * removals share each, back to back: n entries take at least
 * (ceil(n / B) - 1) * B / rate seconds.  Bursts are what ext4 wants next
 * to a writer that syncs: every journal commit writes each metadata
 * block (bitmaps, group descriptor, inode table and directory blocks)
 * that the removals since the previous commit touched, so removals spread
 * evenly over the writer's many commits journal the same blocks again
 * and again, and bunched into one commit a second, once (measured:
 * docs/BENCHMARKS.md, "Polite deletion").
 *
 * Lock rules: pace_mu protects pace_next_ns, pace_burst_ns and
 * pace_burst_left only; nothing else is taken while it is held, and
 * nobody sleeps under it.
 */
#include "internal.h"

#include <errno.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void de__pace_init(de_ctx *ctx)
{
	pthread_mutex_init(&ctx->pace_mu, NULL);
	ctx->pace_next_ns = 0;
	ctx->pace_burst_ns = 0;
	ctx->pace_burst_left = 0;
	ctx->pace_gap_ns = ctx->cfg.rate ? 1000000000u / ctx->cfg.rate : 0;
	if (ctx->cfg.rate && !ctx->pace_gap_ns)
		ctx->pace_gap_ns = 1;
}

void de__pace_destroy(de_ctx *ctx)
{
	pthread_mutex_destroy(&ctx->pace_mu);
}

/* Wait for this removal's slot.  Returns at once when no rate is set. */
void de__pace(de_ctx *ctx)
{
	uint64_t now, slot;
	struct timespec ts;

	if (!ctx->pace_gap_ns)
		return;
	now = now_ns();
	pthread_mutex_lock(&ctx->pace_mu);
	if (ctx->pace_burst_left && ctx->pace_next_ns > now) {
		/* Inside a burst: right behind its start. */
		ctx->pace_burst_left--;
		slot = ctx->pace_burst_ns > now ? ctx->pace_burst_ns : now;
	} else {
		/* A burst (of one without rate_burst) starts at the next
		 * free slot; the next one is burst * gap later. */
		unsigned burst = ctx->cfg.rate_burst > 1 ? ctx->cfg.rate_burst : 1;

		slot = ctx->pace_next_ns > now ? ctx->pace_next_ns : now;
		ctx->pace_burst_ns = slot;
		ctx->pace_burst_left = burst - 1;
		ctx->pace_next_ns = slot + ctx->pace_gap_ns * burst;
	}
	pthread_mutex_unlock(&ctx->pace_mu);
	if (slot <= now)
		return;
	ts.tv_sec = (time_t)((slot - now) / 1000000000u);
	ts.tv_nsec = (long)((slot - now) % 1000000000u);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

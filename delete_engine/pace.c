/*
 * pace.c - a rate limit on removals, for deleting politely.
 *
 * Every unlinkat() and rmdir, and every entry the dispose hook takes
 * instead (rsync's --backup renames), first calls de__pace(), which
 * hands out start times: de_config.rate removals a second over all
 * workers, in bursts of rate_burst.  A worker takes the next slot under
 * the lock and sleeps until it outside the lock.  No slots are banked
 * while nothing is removed, so an idle spell is not followed by a burst.
 *
 * With de_config.adaptive the pace follows the other I/O: rate_max while
 * no other process waits for the disk, rate_busy while one does, and
 * nothing at all for the first yield_ms of such a spell.  The signal is
 * Linux's PSI (/proc/pressure/io "some"), which counts this deletion's
 * own waits too, so it is read in quiet windows: every removal waits
 * DE__PACE_PROBE_NS, and the waiting that grows meanwhile is others'.  A
 * busy window is looked at again DE__PACE_CONFIRM_NS on, then twice as far
 * after each busy one, up to DE__PACE_REPROBE_NS, so full speed is back
 * within about a second of the others' end.  At full speed the signal is
 * read every DE__PACE_LOOK_NS, and a jump in it brings a window at once.
 *
 * Why the pace is what it is (the numbers: tunables.h; the measurements:
 * docs/BENCHMARKS.md, "Polite deletion"):
 *
 * Bursts (rate_burst).  On ext4 next to a writer that syncs, every
 * journal commit writes each metadata block (bitmaps, group
 * descriptors, inode-table and directory blocks) that the removals
 * since the last commit touched.  Removals spread evenly over the
 * writer's many commits journal the same blocks again and again;
 * bunched into one commit, once.
 *
 * Pressure, read in quiet windows (adaptive).  Linux's I/O pressure
 * (PSI) is the time some task waited for I/O: a writer that syncs
 * waits nearly all the time, so others' need for the disk shows at
 * once.  The engine's own latency (LEDBAT's idea) cannot see that
 * writer where reads and writes are served apart (the throttled test
 * device; a disk with a write cache).  PSI counts the deletion's own
 * waits too, so the pacer stops all removals for a short window and
 * reads the pressure of that window: others' alone.  A window comes
 * first, so a deletion next to a writer never starts at full speed,
 * and at once when the pressure grows while the deletion runs free.
 * After a first busy window the next comes soon, so that full speed is
 * back at once when all that waited was the deletion's own write-back
 * still under way (xfs's log writes on a loop device wait in the
 * loop's worker thread, which PSI counts).
 *
 * A lower pace while others wait (rate_busy).  The pace counts
 * removals, not what they cost the disk, and most of that cost, the
 * metadata they dirty, is written back later by the flusher, where a
 * pace cannot see it; a burst of that write-back can stall a writer on
 * an IOPS-bound disk for a second.  Counted in full, write-back
 * included, the pace kept where there is no signal costs a waiting
 * writer too much, so the pace while others wait is lower.  Pacing by
 * the time of a syncfs() after each burst was tried and dropped: the
 * throttle, it seems, lets the write-back through and charges it to
 * the writer's next I/O, so its latency is not its cost.
 *
 * Yield first (yield_ms).  Even the slow pace leaves a writer
 * write-back to wait for at its end; a deletion that removes nothing
 * through a short spell of others' I/O leaves none.  So the slow pace
 * is for the longer spells.  The price: a deletion next to longer I/O
 * starts that much later.
 *
 * The pacer's state (struct de__pacer) is this file's alone.  Lock
 * rules: its mu protects its fields; nothing else is taken while it is
 * held, and nobody sleeps under it.  gap_ns, free_ns and adapting are
 * also read without it (atomically), so that a removal at full speed
 * takes no lock until the next look.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/syscall.h>
#endif

/* The pacer: this file's alone, one per context (ctx->pace). */
struct de__pacer {
	const struct de_config *cfg;	/* the context's */
	pthread_mutex_t mu;		/* guards the fields below */
	uint64_t next_ns;		/* the next free slot */
	uint64_t gap_ns;		/* between slots; 0: no limit */
	unsigned burst;			/* removals per slot at it */
	uint64_t burst_ns;		/* this burst's start */
	unsigned burst_left;		/* removals left in it */
	/* Adaptive politeness (cfg->adaptive with a signal). */
	int adapting;
	int busy;			/* others wait: the slow pace */
	int psi_fd;			/* /proc/pressure/io, or -1 */
	uint64_t slow_ns, fast_ns;	/* the two gaps */
	unsigned slow_rate, slow_burst;	/* and the slow pace */
	uint64_t event_ns;		/* next look or probe */
	uint64_t reprobe_ns;		/* from a busy window to the next */
	uint64_t probe_ns;		/* a quiet window's end; 0 */
	uint64_t probe_ok_ns;		/* no probe on suspicion before */
	uint64_t free_ns;		/* no pacing until then */
	uint64_t yield_ns;		/* a busy spell's yield ends; 0 */
	uint64_t sig_us, sig_ns;	/* the last reading, when */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t gap_of(unsigned rate)
{
	uint64_t gap = rate ? 1000000000u / rate : 0;

	return rate && !gap ? 1 : gap;
}

/* The pace from now on: the slow one, or rate_max's; no pacing at all
 * until free_until. */
static void set_pace(struct de__pacer *p, int slow, uint64_t free_until)
{
	unsigned burst = p->cfg->rate_burst > 1 ? p->cfg->rate_burst : 1;

	p->burst = slow ? p->slow_burst : burst;
	__atomic_store_n(&p->gap_ns,
			 slow ? p->slow_ns : p->fast_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&p->free_ns, free_until, __ATOMIC_RELEASE);
}

/* Pace at the slow pace from now on: rate, or with a signal rate_busy
 * when lower, its bursts as long in time as rate's. */
static void set_slow(struct de__pacer *p, int busy_rate)
{
	unsigned rate = p->cfg->rate, burst = p->cfg->rate_burst;

	if (busy_rate && p->cfg->rate_busy && p->cfg->rate_busy < rate) {
		burst = (unsigned)((uint64_t)burst * p->cfg->rate_busy / rate);
		rate = p->cfg->rate_busy;
	}
	p->slow_rate = rate;
	p->slow_burst = burst > 1 ? burst : 1;
	p->slow_ns = gap_of(rate);
	set_pace(p, 1, 0);
}

/* The total of /proc/pressure/io's "some" line, in microseconds. */
static int read_psi(int fd, uint64_t *us)
{
	char buf[256], *t;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (strncmp(buf, "some ", 5) != 0 || !(t = strstr(buf, " total=")))
		return -1;
	*us = strtoull(t + 7, NULL, 10);
	return 0;
}

static int read_signal(struct de__pacer *p, uint64_t *us)
{
	if (p->cfg->pressure)
		return p->cfg->pressure(p->cfg->pressure_arg, us);
	return read_psi(p->psi_fd, us);
}

/* Make the context's pacer (ctx->pace), with its rate, and its signal
 * where adaptive; 0 or -ENOMEM. */
int de__pace_init(de_ctx *ctx)
{
	struct de__pacer *p = calloc(1, sizeof(*p));
	uint64_t us;

	if (!p)
		return -ENOMEM;
	ctx->pace = p;
	p->cfg = &ctx->cfg;
	pthread_mutex_init(&p->mu, NULL);
	p->psi_fd = -1;
	p->fast_ns = gap_of(p->cfg->rate_max);
	set_slow(p, 0);
	p->busy = 1;
	if (!p->cfg->adaptive || !p->cfg->rate)
		return 0;
	if (!p->cfg->pressure)
		p->psi_fd = open("/proc/pressure/io", O_RDONLY | O_CLOEXEC);
	if (read_signal(p, &us) < 0)
		return 0;	/* no signal: rate throughout */
	p->adapting = 1;
	set_slow(p, 1);
	p->sig_us = us;
	p->sig_ns = now_ns();
	p->event_ns = 0;	/* the first removal starts a window */
	p->reprobe_ns = DE__PACE_CONFIRM_NS;
	return 0;
}

void de__pace_destroy(de_ctx *ctx)
{
	struct de__pacer *p = ctx->pace;

	if (!p)
		return;
	if (p->psi_fd >= 0)
		close(p->psi_fd);
	pthread_mutex_destroy(&p->mu);
	free(p);
	ctx->pace = NULL;
}

/* How much of the time since the last reading tasks waited for I/O. */
static unsigned permille(struct de__pacer *p, uint64_t us, uint64_t now)
{
	uint64_t dt_us = (now - p->sig_ns) / 1000;

	if (!dt_us || us < p->sig_us)
		return 0;
	return (us - p->sig_us) * 1000 / dt_us;
}

/* Under pace_mu: is the pace none at all, others waiting for less than
 * yield_ms so far? */
static int yielding(const struct de__pacer *p, uint64_t now)
{
	return p->busy && now < p->yield_ns;
}

/* Under pace_mu: what a removal must wait for before it looks again: a
 * quiet window's end, or while yielding the next window or the yield's
 * end, whichever comes first; 0: nothing. */
static uint64_t hold_until(const struct de__pacer *p, uint64_t now)
{
	if (p->probe_ns)
		return p->probe_ns;
	if (yielding(p, now))
		return p->event_ns < p->yield_ns ? p->event_ns
							     : p->yield_ns;
	return 0;
}

/*
 * Under pace_mu: bring the adaptive state up to now.  Returns when the
 * caller may look again (hold_until()), or 0: it may go on.
 */
static uint64_t adapt(struct de__pacer *p, uint64_t now)
{
	uint64_t us;
	unsigned busy;

	if (now < p->event_ns)
		return hold_until(p, now);
	if (read_signal(p, &us) < 0) {
		/* The signal went away: rate from now on. */
		__atomic_store_n(&p->adapting, 0, __ATOMIC_RELAXED);
		p->busy = 1;
		p->probe_ns = 0;
		p->yield_ns = 0;
		set_slow(p, 0);
		return 0;
	}
	busy = permille(p, us, now) >= DE__BUSY_PERMILLE;
	if (p->probe_ns) {
		/* A quiet window is over: what waited in it was others. */
		p->busy = busy;
		p->probe_ns = 0;
		if (busy) {
			/* A spell of others' waiting starts: yield to it. */
			if (!p->yield_ns)
				p->yield_ns = now + p->cfg->yield_ms * DE__MS;
			p->event_ns = now + p->reprobe_ns;
			p->reprobe_ns *= 2;
			if (p->reprobe_ns > DE__PACE_REPROBE_NS)
				p->reprobe_ns = DE__PACE_REPROBE_NS;
		} else {
			p->yield_ns = 0;
			p->event_ns = now + DE__PACE_LOOK_NS;
			p->reprobe_ns = DE__PACE_CONFIRM_NS;
		}
		p->probe_ok_ns = now + DE__PACE_SUSPECT_NS;
	} else if (p->busy || (busy && now >= p->probe_ok_ns)) {
		/* Time to look again (busy), or a suspicion: stop and ask. */
		p->probe_ns = p->event_ns = now + DE__PACE_PROBE_NS;
	} else {
		p->event_ns = now + DE__PACE_LOOK_NS;
	}
	p->sig_us = us;
	p->sig_ns = now;
	if (p->probe_ns || p->busy)
		set_pace(p, 1, 0);
	else
		set_pace(p, 0, p->fast_ns ? 0 : p->event_ns);
	return hold_until(p, now);
}

static void sleep_until(uint64_t when, uint64_t now)
{
	struct timespec ts;

	if (when <= now)
		return;
	ts.tv_sec = (time_t)((when - now) / 1000000000u);
	ts.tv_nsec = (long)((when - now) % 1000000000u);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Is a burst going on, with removals left in it? */
static int in_burst(const struct de__pacer *p, uint64_t now)
{
	return p->burst_left && p->next_ns > now;
}

/* Wait for this removal's slot.  Returns at once when no rate is set. */
void de__pace(de_ctx *ctx)
{
	struct de__pacer *p = ctx->pace;
	uint64_t now, slot, wait;

	/* No rate, no pace (the adaptive mode needs one too): the common
	 * case reads the context's configuration, not the pacer. */
	if (!ctx->cfg.rate)
		return;
	if (!__atomic_load_n(&p->gap_ns, __ATOMIC_RELAXED)
	 && !__atomic_load_n(&p->adapting, __ATOMIC_RELAXED))
		return;
	now = now_ns();
	if (now < __atomic_load_n(&p->free_ns, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&p->mu);
	while (p->adapting) {
		wait = adapt(p, now);
		/* A burst that would start after the next look waits for
		 * the look instead: the pace may change there.  (adapt()
		 * ends pace_adapt when the signal goes.) */
		if (!wait && p->adapting && p->gap_ns && !in_burst(p, now)
		 && p->next_ns > p->event_ns)
			wait = p->event_ns;
		if (!wait)
			break;
		pthread_mutex_unlock(&p->mu);
		sleep_until(wait, now);
		/* A yield lasts seconds: the calling thread still delivers
		 * progress, which is how rsync sends keep-alives, and a
		 * cancelled run does not wait for it to end. */
		if (ctx->run.rep.tick && de__is_caller(ctx))
			ctx->run.rep.tick(ctx);
		if (de__cancelled(ctx))
			return;
		now = now_ns();
		pthread_mutex_lock(&p->mu);
	}
	if (!p->gap_ns) {
		pthread_mutex_unlock(&p->mu);
		return;
	}
	if (in_burst(p, now)) {
		/* Inside a burst: right behind its start. */
		p->burst_left--;
		slot = p->burst_ns > now ? p->burst_ns : now;
	} else {
		/* A burst (of one without rate_burst) starts at the next
		 * free slot; the next one is burst * gap later. */
		unsigned burst = p->burst;

		slot = p->next_ns > now ? p->next_ns : now;
		p->burst_ns = slot;
		p->burst_left = burst - 1;
		p->next_ns = slot + p->gap_ns * burst;
	}
	pthread_mutex_unlock(&p->mu);
	sleep_until(slot, now);
}

/* The pace now, for progress: removals a second, 0 for no limit,
 * DE_PACE_YIELD for none. */
unsigned de__pace_rate(de_ctx *ctx)
{
	struct de__pacer *p = ctx->pace;
	unsigned rate;

	pthread_mutex_lock(&p->mu);
	if (p->adapting && yielding(p, now_ns()))
		rate = DE_PACE_YIELD;
	else
		rate = !p->adapting || p->busy ? p->slow_rate
							  : p->cfg->rate_max;
	pthread_mutex_unlock(&p->mu);
	return rate;
}

/* See delete_engine.h; the numbers, and where they were measured, are
 * tunables.h's. */
void de_config_polite(struct de_config *cfg, unsigned rate)
{
	cfg->adaptive = 1;
	cfg->rate_max = rate;
	cfg->rate = rate && rate < DE__POLITE_RATE ? rate : DE__POLITE_RATE;
	cfg->rate_burst = cfg->rate;
	cfg->rate_busy = rate && rate < DE__POLITE_BUSY_RATE ? rate :
			 DE__POLITE_BUSY_RATE;
	cfg->yield_ms = DE__POLITE_YIELD_MS;
}

/* See delete_engine.h. */
int de_polite_io(void)
{
#if defined __linux__ && defined SYS_ioprio_set
	const int who_process = 1, class_idle = 3, class_shift = 13;

	if (syscall(SYS_ioprio_set, who_process, 0, class_idle << class_shift) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}

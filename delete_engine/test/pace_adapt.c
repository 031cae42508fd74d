/* pace_adapt: de_config.adaptive, driven by a fake pressure source.
 * Others waiting (the signal grows with the clock): rate applies, n
 * entries take at least (n - 1) / rate seconds, and progress says so.
 * Nobody waiting (the signal stands still): no limit, far faster than
 * rate allows, and progress says 0; rate_max caps that.  Others who stop
 * waiting: the pace is back to no limit within about a second.  Others
 * who start: the pace falls to rate.  Others who waited in one window
 * only: no limit again at the next, 0.1 s on.  No signal: rate
 * throughout.
 * rate_busy below rate: it is the pace while others wait, in bursts as
 * long in time as rate's, and rate is still the pace without a signal,
 * from the start or once it goes away.
 * yield_ms: while others wait, nothing at all is removed until they have
 * waited that long, then rate_busy applies, and progress says which;
 * others who stop waiting meanwhile get the rest at once; without a
 * signal there is nothing to yield to. */
#include "tutil.h"

enum { IDLE, BUSY, GONE };

static struct fake {
	int before, after;	/* the source's state before and after switch_s */
	double switch_s, t0;
	unsigned pace_min, pace_max;	/* paces progress saw */
	double at_s;			/* when to sample removed_at */
	uint64_t removed_at;		/* removals by then, plus 1; 0 */
	double last_s, max_gap_s;	/* progress: the longest gap in 1 s */
} fk;

static int fake_pressure(void *arg, uint64_t *us)
{
	double t = t_now() - fk.t0;
	int state = t < fk.switch_s ? fk.before : fk.after;

	(void)arg;
	if (state == GONE)
		return -1;
	/* BUSY: some task waited all the time; IDLE: the total stands,
	 * at what it reached by the switch. */
	if (state == BUSY)
		*us = (uint64_t)(t * 1e6);
	else
		*us = fk.before == BUSY && t >= fk.switch_s ? (uint64_t)(fk.switch_s * 1e6) : 0;
	return 0;
}

static int on_progress(void *arg, const struct de_progress *p)
{
	double t = t_now() - fk.t0;

	(void)arg;
	if (t < 1.0 && t - fk.last_s > fk.max_gap_s)
		fk.max_gap_s = t - fk.last_s;
	fk.last_s = t;
	if (p->pace < fk.pace_min)
		fk.pace_min = p->pace;
	if (p->pace > fk.pace_max)
		fk.pace_max = p->pace;
	if (!fk.removed_at && t >= fk.at_s)
		fk.removed_at = p->removed + 1;
	return 0;
}

/*
 * One removal for run(): tree, n files, with rate, rate_max, rate_busy,
 * rate_burst and yield_ms as in de_config (serial: max_delete 1000, with
 * which the calling thread removes), under the fake source going from
 * before to after at switch_s (the same state throughout where they are
 * equal); removed_at sampled at sample_s (0: at 1 s).
 */
struct setup {
	int n;
	unsigned rate, rate_max, rate_busy, rate_burst, yield_ms;
	int serial, before, after;
	double switch_s, sample_s;
};

/* Remove tree as s says; returns the seconds it took, or -1. */
static double run(int dfd, const struct setup *s)
{
	struct de_config cfg = { .threads = 2,
				 .max_delete = s->serial ? 1000 : -1,
				 .progress_ms = 20, .rate = s->rate,
				 .adaptive = 1, .rate_max = s->rate_max,
				 .rate_busy = s->rate_busy,
				 .rate_burst = s->rate_burst,
				 .yield_ms = s->yield_ms,
				 .pressure = fake_pressure };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_hooks h = { .progress = on_progress };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	double took = -1;

	memset(&fk, 0, sizeof fk);
	fk.before = s->before;
	fk.after = s->after;
	fk.switch_s = s->switch_s;
	fk.pace_min = ~0u;
	fk.at_s = s->sample_s ? s->sample_s : 1.0;
	if (mkdirat(dfd, "tree", 0755) || t_files(dfd, "tree/f%d", s->n))
		return -1;
	fk.t0 = t_now();
	if (de_ctx_new(&ctx, &cfg) == 0
	 && t_remove_timed(ctx, dfd, &t, &h, &sum, &took) == 0
	 && !t_exists(dfd, "tree") && sum.removed_total == (uint64_t)s->n + 1) {
		de_ctx_free(ctx);
		return took;
	}
	de_ctx_free(ctx);
	return -1;
}

int test(int dfd)
{
	int ret = T_FAIL;
	double took = 0;
	const char *what = "";

	what = "busy";
	took = run(dfd, &(struct setup){ .n = 100, .rate = 200,
					 .before = BUSY, .after = BUSY });
	CHECK(took >= 100 / 200.0);
	CHECK(fk.pace_max == 200 && fk.pace_min == 200);

	what = "idle";
	took = run(dfd, &(struct setup){ .n = 3000, .rate = 100,
					 .before = IDLE, .after = IDLE });
	/* 30 s at the rate; the first quiet window is 20 ms. */
	CHECK(took >= 0 && took < 3.0);

	what = "idle, capped";
	took = run(dfd, &(struct setup){ .n = 300, .rate = 100,
					 .rate_max = 1000,
					 .before = IDLE, .after = IDLE });
	CHECK(took >= 300 / 1000.0 && took < 3.0);
	CHECK(fk.pace_max == 1000);

	what = "busy, then idle";
	took = run(dfd, &(struct setup){ .n = 3000, .rate = 100,
					 .before = BUSY, .after = IDLE,
					 .switch_s = 0.5 });
	/* 30 s at the rate; back to no limit at the first window after
	 * 0.5 s (windows 0.1, 0.2, 0.4 s... after each busy one). */
	CHECK(took >= 0.5 && took < 1.5);
	CHECK(fk.pace_max == 100 && fk.pace_min == 0);

	what = "one busy window";
	took = run(dfd, &(struct setup){ .n = 3000, .rate = 100,
					 .before = BUSY, .after = IDLE,
					 .switch_s = 0.03 });
	/* Others waited in the first window only (the deletion's own
	 * write-back, say): the next one, 0.1 s on, finds nobody and the
	 * rest goes at once, not after a second at the rate. */
	CHECK(took >= 0 && took < 0.6);
	CHECK(fk.pace_max == 100 && fk.pace_min == 0);

	what = "idle, then busy";
	took = run(dfd, &(struct setup){ .n = 1500, .rate = 400,
					 .rate_max = 1000,
					 .before = IDLE, .after = BUSY,
					 .switch_s = 0.4, .sample_s = 1.2 });
	/* At the cap alone, all 1,501 would be gone by 1.6 s.  Others start
	 * waiting at 0.4 s, so that a slow start (TSan on a loaded machine)
	 * still finds its first window idle; the next window comes 0.5 s
	 * after the first at the earliest (PACE_SUSPECT_NS), and from
	 * there 400 a second leaves fewer by 1.2 s and takes longer. */
	CHECK(took >= 2.0);
	CHECK(fk.removed_at > 0 && fk.removed_at - 1 < 1100);
	CHECK(fk.pace_min == 400 && fk.pace_max == 1000);

	what = "no signal";
	took = run(dfd, &(struct setup){ .n = 100, .rate = 200,
					 .before = GONE, .after = GONE });
	CHECK(took >= 100 / 200.0);

	what = "busy, rate_busy";
	took = run(dfd, &(struct setup){ .n = 200, .rate = 2000,
					 .rate_busy = 200, .rate_burst = 2000,
					 .before = BUSY, .after = BUSY });
	/* 201 entries in bursts of 200 a second (2,000 a second would take
	 * them in one): 200 at 0 s, 1 at 1 s. */
	CHECK(took >= 0.9);
	CHECK(fk.pace_max == 200 && fk.pace_min == 200);

	what = "busy, rate_busy, then the signal goes";
	took = run(dfd, &(struct setup){ .n = 1000, .rate = 2000,
					 .rate_busy = 200, .rate_burst = 2000,
					 .before = BUSY, .after = GONE,
					 .switch_s = 0.5 });
	/* 200 at 0 s; the first look after 0.5 s finds the signal gone,
	 * and rate and its bursts take the rest at once in the slot the
	 * slow pace booked, 1 s (at 200 a second: 4 s). */
	CHECK(took >= 0.9 && took < 1.5);

	what = "no signal, rate_busy";
	took = run(dfd, &(struct setup){ .n = 400, .rate = 2000,
					 .rate_busy = 200, .rate_burst = 2000,
					 .before = GONE, .after = GONE });
	/* rate, in one burst of 2,000. */
	CHECK(took >= 0 && took < 1.0);

	what = "busy, yield";
	took = run(dfd, &(struct setup){ .n = 150, .rate = 500,
					 .rate_busy = 100, .rate_burst = 500,
					 .yield_ms = 600,
					 .before = BUSY, .after = BUSY,
					 .sample_s = 0.5 });
	/* Nothing until 0.62 s (the first window, 20 ms, starts the
	 * spell), then 100 at once and 51 a second later. */
	CHECK(took >= 1.5 && took < 2.5);
	CHECK(fk.removed_at == 1);
	CHECK(fk.pace_max == DE_PACE_YIELD && fk.pace_min == 100);

	what = "busy, yield, serial";
	took = run(dfd, &(struct setup){ .n = 150, .rate = 500,
					 .rate_busy = 100, .rate_burst = 500,
					 .yield_ms = 600, .serial = 1,
					 .before = BUSY, .after = BUSY,
					 .sample_s = 0.5 });
	/* With max_delete the calling thread removes, and so waits in the
	 * yield itself: it still delivers progress (rsync's keep-alives)
	 * at every look.  (Gaps count in the first second only: after the
	 * yield, the next slow burst is a second away, as it always was.) */
	CHECK(took >= 1.5 && took < 2.5);
	CHECK(fk.removed_at == 1 && fk.max_gap_s < 0.5);

	what = "busy, yield, then idle";
	took = run(dfd, &(struct setup){ .n = 3000, .rate = 1000,
					 .rate_busy = 100, .rate_burst = 500,
					 .yield_ms = 10000,
					 .before = BUSY, .after = IDLE,
					 .switch_s = 0.3, .sample_s = 0.25 });
	/* Nothing while others wait; the first window after 0.3 s (they
	 * come 0.1, 0.2, 0.4 s apart) finds nobody, and the rest goes at
	 * once. */
	CHECK(took >= 0.3 && took < 1.3);
	CHECK(fk.removed_at == 1);
	CHECK(fk.pace_max == DE_PACE_YIELD && fk.pace_min == 0);

	what = "no signal, yield";
	took = run(dfd, &(struct setup){ .n = 100, .rate = 200,
					 .rate_busy = 100, .rate_burst = 100,
					 .yield_ms = 10000,
					 .before = GONE, .after = GONE,
					 .sample_s = 0.25 });
	/* rate, 200 a second in bursts of 100, from the start: nothing to
	 * yield to. */
	CHECK(took >= 100 / 200.0 && took < 2.0);
	CHECK(fk.removed_at > 1);

	ret = T_PASS;
out:
	if (ret != T_PASS)
		fprintf(stderr, "pace_adapt: %s: %.3f s, pace %u..%u, %lld removed at %.1f s\n",
			what, took, fk.pace_min, fk.pace_max,
			(long long)fk.removed_at - 1, fk.at_s);
	return ret;
}

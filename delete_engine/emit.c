/*
 * emit.c - what the calling thread hands the caller: reports (in
 * canonical order from the walks, walk.c, or as work completes), counts,
 * progress, and the sleeping in between.  Nodes are freed here alone
 * (de__emit_free), once reported.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Free node c (the emitter's; no one else frees nodes).  pbuf keeps its
 * prefix valid: if it held c's path, it now holds c's parent's, which is
 * still alive (a parent is freed only after its children).
 */
void de__emit_free(de_ctx *ctx, struct de__node *c)
{
	const struct de__node *m = ctx->run.rep.pbuf_node;

	/* Usually m is c itself (its report was the last path built). */
	while (m && m->depth > c->depth)
		m = m->parent;
	if (m == c)
		ctx->run.rep.pbuf_node = c->parent;
	de__node_free(ctx, c);
}

static void count(de_ctx *ctx, int res, int type)
{
	struct de_summary *s = &ctx->run.sum;

	switch (res) {
	case DE_R_REMOVED:
	case DE_R_DONE:
		s->removed[type < DE_T_COUNT ? type : 0]++;
		s->removed_total++;
		break;
	case DE_R_FAILED: s->failed++; break;
	case DE_R_NOT_EMPTY: s->not_empty++; break;
	case DE_R_SKIPPED: s->skipped++; break;
	case DE_R_MOUNT: case DE_R_OTHER_FS: s->mounts++; break;
	case DE_R_KEPT: s->kept++; break;
	case DE_R_VANISHED: s->vanished++; break;
	}
}

void de__maybe_progress(de_ctx *ctx, int force)
{
	uint64_t now = de__now_ms();
	struct de_progress p = { 0 };

	if (!force && now - ctx->run.rep.last_prog_ms < ctx->cfg.progress_ms)
		return;
	ctx->run.rep.last_prog_ms = now;
	if (!ctx->run.hooks->progress || de__cancelled(ctx))
		return;
	p.removed = __atomic_load_n(&ctx->run.rep.unlinked, __ATOMIC_RELAXED);
	if (p.removed < ctx->run.sum.removed_total)
		p.removed = ctx->run.sum.removed_total;
	p.failed = ctx->run.sum.failed;
	pthread_mutex_lock(&ctx->mu);
	p.dirs_pending = ctx->run.rep.prog.dirs_pending;
	pthread_mutex_unlock(&ctx->mu);
	p.elapsed_ms = now - ctx->run.rep.t0_ms;
	p.pace = de__pace_rate(ctx);
	if (ctx->run.hooks->progress(ctx->run.hooks->arg, &p)) {
		pthread_mutex_lock(&ctx->mu);
		__atomic_store_n(&ctx->run.cancel, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&ctx->mu);
	}
}

/* ctx->run.rep.tick: progress from the calling thread while it removes (sched.c
 * de__remove_at).  No lock is held here. */
void de__caller_tick(de_ctx *ctx)
{
	de__maybe_progress(ctx, 0);
}

/* Deliver one report; path is in ctx->pbuf. */
static void report(de_ctx *ctx, unsigned set, int type, mode_t mode,
		   int res, int op, int err)
{
	struct de_report r;

	count(ctx, res, type);
	if (ctx->run.hooks->report && !de__cancelled(ctx)) {
		r.path = ctx->pbuf ? ctx->pbuf : "?";
		r.type = (enum de_type)type;
		r.mode = mode;
		r.result = (enum de_result)res;
		r.op = (enum de_op)op;
		r.err = err;
		r.dry_run = !!(ctx->run.flags & DE_F_DRY_RUN);
		r.set = set;
		ctx->run.hooks->report(ctx->run.hooks->arg, &r);
	}
}

/* Does the caller want reports of result res (de_hooks.skip_results)? */
static int wanted(const de_ctx *ctx, int res)
{
	return !(ctx->run.hooks->skip_results & (1u << res));
}

void de__report_ent(de_ctx *ctx, struct de__node *n, long dlen,
		    const struct de__ent *e)
{
	size_t pos = dlen > 0 ? (size_t)dlen + 1 : 0;

	/* Counted even when no memory is left to build its path for the
	 * report: a failure must still fail the run. */
	if (!wanted(ctx, e->res) || dlen < 0) {
		count(ctx, e->res, e->type);
		return;
	}
	if (pos + e->len + 1 > ctx->pcap) {
		char *p = realloc(ctx->pbuf, (pos + e->len + 1) * 2);

		if (!p) {
			count(ctx, e->res, e->type);
			return;
		}
		ctx->pbuf = p;
		ctx->pcap = (pos + e->len + 1) * 2;
	}
	if (pos)
		ctx->pbuf[dlen] = '/';
	memcpy(ctx->pbuf + pos, de__ent_name(n, e), e->len);
	ctx->pbuf[pos + e->len] = 0;
	report(ctx, n->set, e->type, e->mode, e->res, e->op, e->err);
}

void de__report_self(de_ctx *ctx, struct de__node *c)
{
	if (!wanted(ctx, c->res) || de__node_path(ctx, c, 0) < 0) {
		count(ctx, c->res, DE_T_DIR);	/* as in de__report_ent() */
		return;
	}
	report(ctx, c->set, DE_T_DIR, c->mode, c->res, c->op, c->err);
}

/*
 * Sleep until signalled or the next progress tick.  Tree lock held.  In
 * a pool that could start no worker (ctx.c de__ctx_start()), run queued
 * work instead, one item per call: whatever the caller waits for can
 * only be done here.  Such work runs with the caller's buffer, as when
 * need_scanned() runs a scan itself, and so de__task() makes no chain of
 * scans ahead on it.
 */
void de__sleep_locked(de_ctx *ctx)
{
	struct timespec ts;
	uint64_t due = ctx->run.rep.last_prog_ms + ctx->cfg.progress_ms;
	uint64_t now = de__now_ms();
	struct de__work *w;

	if (ctx->pool.nthreads == 0 && (w = de__pool_take(&ctx->pool))) {
		pthread_mutex_unlock(&ctx->mu);
		w->fn(w, ctx->caller_buf);
		de__maybe_progress(ctx, 0);
		pthread_mutex_lock(&ctx->mu);
		return;
	}
	if (due > now) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)((due - now) / 1000);
		ts.tv_nsec += (long)((due - now) % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		ctx->run.waiting = 1;
		pthread_cond_timedwait(&ctx->cv, &ctx->mu, &ts);
		ctx->run.waiting = 0;
	}
	pthread_mutex_unlock(&ctx->mu);
	de__maybe_progress(ctx, 0);
	pthread_mutex_lock(&ctx->mu);
}

/* Wait until n reaches state. */
void de__wait_state(de_ctx *ctx, struct de__node *n, int state)
{
	pthread_mutex_lock(&ctx->mu);
	while (n->state < state)
		de__sleep_locked(ctx);
	pthread_mutex_unlock(&ctx->mu);
}

/* Deliver the queued events.  Tree lock held (dropped while reporting). */
void de__emit_queued(de_ctx *ctx)
{
	struct de__ev *ev;
	struct de__node *c;

	while ((ev = ctx->run.ev.head)) {
		int mask = ev->kind;

		c = ev->node;
		ctx->run.ev.head = ev->next;
		if (!ctx->run.ev.head)
			ctx->run.ev.tail = NULL;
		ctx->run.ev.count--;
		if (mask & DE__EV_FILES)
			ctx->run.ev.ents -= c->ls.nents;
		pthread_mutex_unlock(&ctx->mu);
		if (mask & DE__EV_FILES) {
			long dlen = de__node_path(ctx, c, 256);
			size_t i;

			for (i = 0; i < c->ls.nents; i++)
				if (!c->ls.ents[i].child &&
				    c->ls.ents[i].done)
					de__report_ent(ctx, c, dlen,
						   &c->ls.ents[i]);
			/*
			 * No worker reads the listing after
			 * NS_FILES: free it now, so only
			 * directories being worked on hold one.
			 */
			free(c->ls.ents);
			free(c->ls.arena);
			c->ls.ents = NULL;
			c->ls.arena = NULL;
			c->ls.nents = 0;
		}
		if (mask & DE__EV_SELF) {
			de__report_self(ctx, c);
			de__emit_free(ctx, c);
		}
		de__maybe_progress(ctx, 0);
		pthread_mutex_lock(&ctx->mu);
	}
}

/* Unordered: deliver events until the root is final and none is left. */
void de__drain_events(de_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mu);
	for (;;) {
		de__emit_queued(ctx);
		if (ctx->run.root->state == NS_FINAL)
			break;
		de__sleep_locked(ctx);
	}
	pthread_mutex_unlock(&ctx->mu);
}

/*
 * sched.c - the parallel schedule.
 *
 * A directory is a task on the pool: scan it (scan.c), start its child
 * directories, then its unlink phase (phase 2) unlinks its files
 * (unlink.c).  In a narrow tree the ready queue lets one thread read
 * ahead while another unlinks (run_phase2).  de__unlink_phase() is the
 * one way into phase 2, for the schedules and walks alike.
 *
 * Tree lock (ctx->mu) protects node state/refs, the deferred stack, the
 * ready queue and ctx counters.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void phase2(de_ctx *ctx, struct de__node *n, struct de__pin pin);

/*
 * Scan n (scan.c); in hook mode a node it could not enter is finished
 * here at once (NS_FINAL, and n may be freed by the time this returns).
 * Returns n's pin, held only with keep_pin, for the caller.
 */
struct de__pin de__scan(de_ctx *ctx, struct de__node *n, void *buf,
			int keep_pin)
{
	struct de__pin pin;

	if (de__scan_node(ctx, n, buf, keep_pin, &pin)) {
		phase2(ctx, n, pin);
		return DE__NO_PIN;
	}
	return pin;
}




/* Queue or defer the scan of child c.  Tree lock not held. */
void de__schedule(de_ctx *ctx, struct de__node *c)
{
	de__lock(ctx);
	if (de__ordered(ctx) && ctx->run.tree.win_live >= ctx->run.plan.win_max) {
		c->fl.deferred = 1;
		DLIST_PUSH(ctx->run.tree.deferred, c, links.dnext, links.dprev);
		de__unlock(ctx);
		return;
	}
	de__set_state(c, NS_QUEUED);
	if (de__ordered(ctx)) {
		c->fl.inwin = 1;
		ctx->run.tree.win_live++;
	}
	if (de__serial(ctx))
		ctx->run.tree.scans_inflight++;
	c->work.fn = de__task;
	de__unlock(ctx);
	de__pool_submit(&ctx->pool, &c->work, 1);
}

/*
 * Take c off the deferred list and mark its scan queued, counting it in
 * the look-ahead window when in_window.  The caller holds ctx->mu and
 * runs or submits the scan itself.
 */
void de__undefer(de_ctx *ctx, struct de__node *c, int in_window)
{
	DLIST_DEL(ctx->run.tree.deferred, c, links.dnext, links.dprev);
	c->fl.deferred = 0;
	de__set_state(c, NS_QUEUED);
	if (in_window) {
		c->fl.inwin = 1;
		ctx->run.tree.win_live++;
	}
	if (de__serial(ctx))
		ctx->run.tree.scans_inflight++;
}

/* Submit deferred scans while the window has room. */
void de__pump(de_ctx *ctx)
{
	struct de__node *c;

	de__lock(ctx);
	while ((c = ctx->run.tree.deferred) && ctx->run.tree.win_live < ctx->run.plan.win_max &&
	       !de__cancelled(ctx)) {
		de__undefer(ctx, c, 1);
		c->work.fn = de__task;
		de__unlock(ctx);
		de__pool_submit(&ctx->pool, &c->work, 0);
		de__lock(ctx);
	}
	de__unlock(ctx);
}

/* Create child nodes for n's directories to delete. */
void de__make_children(de_ctx *ctx, struct de__node *n)
{
	size_t i;
	int kept = 0, nkids = 0;

	for (i = 0; i < n->ls.nents; i++) {
		struct de__ent *e = &n->ls.ents[i];
		struct de__node *c;

		if (e->action == DE_A_KEEP) {
			e->res = DE_R_KEPT;
			e->done = 1;
			kept = 1;
			continue;
		}
		if (e->action == DE_A_DONE) {
			e->res = DE_R_DONE;
			e->done = 1;
			continue;
		}
		if (e->type != DE_T_DIR || e->done)
			continue;
		c = de__node_new(ctx, n, de__ent_name(n, e), e->len, e->ino);
		if (!c) {
			e->res = DE_R_FAILED;
			e->op = DE_OP_OPEN;
			e->err = ENOMEM;
			e->done = 1;
			kept = 1;
			continue;
		}
		e->child = c;
		nkids++;
	}
	de__lock(ctx);
	n->cnt.refs += nkids;
	n->cnt.unopened += nkids;
	n->cnt.kept |= kept;
	de__unlock(ctx);
}

/* Schedule n's children, last first so the first lands on top. */
static void schedule_children(de_ctx *ctx, struct de__node *n)
{
	size_t i;

	for (i = n->ls.nents; i-- > 0;)
		if (n->ls.ents[i].child)
			de__schedule(ctx, n->ls.ents[i].child);
}

/*
 * Serial modes: create and schedule n's children for prefetching; the
 * emitter removes entries itself.  Children made early were made by the
 * global schedule's first window before it handed the tree over
 * (global.c hand_over): those it read are scanned, the rest are
 * scheduled here.
 */
void de__prepare_serial(de_ctx *ctx, struct de__node *n)
{
	size_t i;

	/* Nothing of n is removed where it left the tree. */
	if (de__check_place(ctx, n))
		return;
	if (!n->fl.early) {
		de__make_children(ctx, n);
		schedule_children(ctx, n);
		return;
	}
	for (i = n->ls.nents; i-- > 0;)
		if (n->ls.ents[i].child && n->ls.ents[i].child->state == NS_NEW)
			de__schedule(ctx, n->ls.ents[i].child);
}

/* Phase 2 of n has begun: one unlink chunk (its own) pending. */
static void p2_begin(de_ctx *ctx, struct de__node *n)
{
	de__lock(ctx);
	n->fl.p2sub = 1;
	de__set_state(n, NS_P2);
	n->cnt.chunks = 1;
	de__signal(ctx);
	de__unlock(ctx);
}

void de__node_running(de_ctx *ctx, struct de__node *n)
{
	de__lock(ctx);
	de__set_state(n, NS_RUNNING);
	de__unlock(ctx);
}

/*
 * The unlink phase of scanned node n for a schedule that unlinked its
 * files itself (global.c): unlink what is left of them, in listing
 * order, publish them and drop n's own reference.  Its children were
 * made already.  pin: the caller's pin of n, handed over (so that n's
 * removal, if this is its last reference, reopens its parent as "..").
 */
static void files_left(de_ctx *ctx, struct de__node *n, struct de__pin pin)
{
	enum de__files what = DE__FILES_NONE;
	size_t i;

	for (i = 0; i < n->ls.nents; i++) {
		const struct de__ent *e = &n->ls.ents[i];

		if (e->type != DE_T_DIR && !e->done && e->action == DE_A_DELETE)
			break;
	}
	if (i < n->ls.nents) {
		if (!pin.n)
			pin = de__pin_take(ctx, n, -1);
		what = DE__FILES_LISTED;
	}
	p2_begin(ctx, n);
	de__unlink_files(ctx, n, pin, what);
}

/*
 * The unlink phase of a scanned node, on a worker (or inline): create
 * and schedule the children, unlink the non-directories (split across
 * workers when the directory is huge), then drop n's own reference.
 * pin: the caller's pin of n, handed over.
 */
static void phase2(de_ctx *ctx, struct de__node *n, struct de__pin pin)
{
	/*
	 * Read once: children made must also be scheduled.  Children made
	 * early (run_phase2) are scheduled already, so those files must be
	 * unlinked too (a cancel marks them SKIPPED in unlink.c
	 * unlink_range).
	 */
	int early = n->fl.early;
	int stop = !early && (n->fl.skip_scan || de__cancelled(ctx));

	if (!stop) {
		if (!pin.n)
			pin = de__pin_take(ctx, n, -1);
		/* Nothing of n is removed where it left the tree; children
		 * made early ask for themselves. */
		if (pin.n && de__check_place(ctx, n))
			stop = 1;
		else if (!early)
			de__make_children(ctx, n);
	}
	p2_begin(ctx, n);
	if (!stop && !early)
		schedule_children(ctx, n);
	de__unlink_files(ctx, n, pin,
			 stop ? DE__FILES_NONE : DE__FILES_SORTED);
}

/*
 * Look-ahead bounds of a scanning thread along a chain (run_phase2): at
 * most ctx->run.plan.ahead_max scanned nodes (each holds a pinned fd;
 * policy.c de__plan) and DE__READY_ENTS_MAX listed entries (about 40
 * bytes plus the name each) wait on the ready queue.
 */
/*
 * Take c, a child just made, to scan it on this thread without queueing
 * it.  Tree lock held.  Returns 0 when the ordered window is full (the
 * caller schedules c instead, which defers it).
 */
static int take_child(de_ctx *ctx, struct de__node *c)
{
	if (de__ordered(ctx)) {
		if (ctx->run.tree.win_live >= ctx->run.plan.win_max)
			return 0;
		c->fl.inwin = 1;
		ctx->run.tree.win_live++;
	}
	de__set_state(c, NS_RUNNING);
	return 1;
}

/* n's first child to delete, or NULL.  n's listing is complete. */
static struct de__node *first_child(struct de__node *n)
{
	size_t i;

	for (i = 0; i < n->ls.nents; i++)
		if (n->ls.ents[i].child)
			return n->ls.ents[i].child;
	return NULL;
}

/*
 * run_phase2's chain read-ahead: when n is likely to wait for the thread
 * that unlinks (gate open, few tasks queued, the ready queue has room),
 * make its children here, schedule all but the first and return that one
 * for this thread to scan next; NULL otherwise.  A racy peek: making
 * children early is right whether or not n ends up deferred (phase 2 then
 * skips it); run_phase2 decides under the lock.
 */
static struct de__node *read_ahead(de_ctx *ctx, struct de__node *n)
{
	unsigned gate = ctx->run.plan.p2_gate;
	struct de__node *c;
	size_t i;

	if (!gate || ctx->run.plan.dir_hooks || n->fl.skip_scan || de__cancelled(ctx) ||
	    __atomic_load_n(&ctx->sched.p2_active, __ATOMIC_RELAXED) <= 0 ||
	    __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) >= gate ||
	    __atomic_load_n(&ctx->sched.nready, __ATOMIC_RELAXED) >=
	    ctx->run.plan.ahead_max ||
	    __atomic_load_n(&ctx->sched.ready_ents, __ATOMIC_RELAXED) >=
	    DE__READY_ENTS_MAX)
		return NULL;
	de__make_children(ctx, n);
	n->fl.early = 1;
	c = first_child(n);
	for (i = n->ls.nents; i-- > 0;)
		if (n->ls.ents[i].child && n->ls.ents[i].child != c)
			de__schedule(ctx, n->ls.ents[i].child);
	return c;
}

/*
 * Phase 2 of n, then of every node on the ready queue, until it is empty;
 * the caller counted itself in sched.p2_active, which this leaves.
 */
static void unlink_ready(de_ctx *ctx, struct de__node *n, struct de__pin pin)
{
	for (;;) {
		phase2(ctx, n, pin);
		de__lock(ctx);
		n = ctx->sched.ready;
		if (!n) {
			__atomic_store_n(&ctx->sched.p2_active,
					 ctx->sched.p2_active - 1, __ATOMIC_RELAXED);
			de__unlock(ctx);
			return;
		}
		ctx->sched.ready = n->links.rnext;
		if (!ctx->sched.ready)
			ctx->sched.ready_tail = NULL;
		__atomic_store_n(&ctx->sched.nready, ctx->sched.nready - 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->sched.ready_ents, ctx->sched.ready_ents - n->ls.nents,
				 __ATOMIC_RELAXED);
		n->links.rnext = NULL;
		pin = de__pin_move(&n->links.rpin);
		de__unlock(ctx);
	}
}

/*
 * Phase 2 of scanned node n (pin: the caller's, handed over), under phase-2
 * admission.  A thread may start unlinking when no other thread is, or
 * when at least ctx->run.plan.p2_gate directory tasks are queued (the tree is wide
 * here: there is independent work for every worker).  Otherwise n goes on
 * the ready queue, and the thread already in phase 2 takes it when done
 * with its own directory, so a narrow tree runs as a pipeline: one thread
 * unlinks while the others read the next directories ahead.  Why: see
 * policy.c p2_gate.  A thread in phase 2 empties the ready queue
 * before it leaves, so a node put there is always picked up (both happen
 * under the tree lock).  Workers only, never the calling thread.
 *
 * Chains: a directory's subdirectories are known only once it is read,
 * so a reader that queued them in phase 2 would never be more than one
 * directory ahead of the unlinker, and would sleep and be woken once per
 * directory.  So when n is likely to wait (another thread unlinks, few
 * tasks are queued, the ready queue has room), the scanning thread makes
 * n's children itself, queues all but the first and returns the first,
 * which de__task scans next on the same thread without a hand-off: along
 * a chain it runs up to ctx->run.plan.ahead_max directories ahead while the
 * unlinker takes them from the queue in order.  When the queue is full,
 * n's children are left to its phase 2 (or, with ctx->run.plan.p2_help, the
 * reader unlinks it itself).  Returns the child to scan next, or NULL.
 */
static struct de__node *run_phase2(de_ctx *ctx, struct de__node *n,
				   struct de__pin pin)
{
	unsigned gate = ctx->run.plan.p2_gate;
	struct de__node *c = read_ahead(ctx, n);

	de__lock(ctx);
	if (ctx->sched.p2_active > 0 && gate &&
	    __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) < gate) {
		/*
		 * The queue is full: the reader is ahead_max directories
		 * ahead and would sleep until the unlinker catches up.
		 * Where a second unlinker pays (ctx->run.plan.p2_help, policy.c
		 * p2_help), it unlinks this directory itself, the
		 * deepest scanned, far from the unlinker's, then goes on
		 * reading from the child phase 2 queues.  It is not
		 * counted in p2_active: it does not empty the ready queue,
		 * so nodes must not be put there on its account.
		 */
		if (ctx->run.plan.p2_help && !n->fl.early &&
		    ctx->sched.nready >= ctx->run.plan.ahead_max) {
			de__unlock(ctx);
			phase2(ctx, n, pin);
			return NULL;
		}
		n->links.rpin = de__pin_move(&pin);
		FIFO_APPEND(ctx->sched.ready, ctx->sched.ready_tail, n, links.rnext);
		__atomic_store_n(&ctx->sched.nready, ctx->sched.nready + 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->sched.ready_ents, ctx->sched.ready_ents + n->ls.nents,
				 __ATOMIC_RELAXED);
		if (c && take_child(ctx, c)) {
			de__unlock(ctx);
			return c;
		}
		de__unlock(ctx);
		/* From here n may be done and freed; c holds a reference. */
		if (c)
			de__schedule(ctx, c);
		return NULL;
	}
	/* Written under the lock, read without it as a hint (above). */
	__atomic_store_n(&ctx->sched.p2_active, ctx->sched.p2_active + 1,
			 __ATOMIC_RELAXED);
	de__unlock(ctx);
	if (c)
		de__schedule(ctx, c);
	unlink_ready(ctx, n, pin);
	return NULL;
}

/*
 * The work function of a directory: scan, then (worker mode) phase 2,
 * then the child run_phase2 handed back, if any, on the same thread.
 */
void de__task(struct de__work *w, void *buf)
{
	struct de__node *n = DE__NODE_OF(w);
	de_ctx *ctx = n->ctx;

	de__lock(ctx);
	de__set_state(n, NS_RUNNING);
	de__unlock(ctx);
	if (de__serial(ctx) || ctx->run.plan.dir_hooks) {
		(void)de__scan(ctx, n, buf, 0);	/* no pin kept */
		return;
	}
	/*
	 * The calling thread (which runs a task itself only when the walk
	 * needs a directory no worker has started) must not stay in
	 * run_phase2 emptying the ready queue: it has reports and progress
	 * calls to make.  It bypasses the gate instead.
	 */
	if (de__is_caller(ctx)) {
		phase2(ctx, n, de__scan(ctx, n, buf, 1));
		return;
	}
	do
		n = run_phase2(ctx, n, de__scan(ctx, n, buf, 1));
	while (n);
}

static void pool_now_task(struct de__work *w, void *buf)
{
	(void)buf;
	phase2(DE__NODE_OF(w)->ctx, DE__NODE_OF(w), DE__NO_PIN);
}

static void pool_gated_task(struct de__work *w, void *buf)
{
	(void)buf;
	/* Hook mode: run_phase2 never makes children early, so it never
	 * hands one back here. */
	(void)run_phase2(DE__NODE_OF(w)->ctx, DE__NODE_OF(w), DE__NO_PIN);
}

/* See internal.h. */
void de__unlink_phase(de_ctx *ctx, struct de__node *n, struct de__pin pin,
		      enum de__p2 kind)
{
	DE__ASSERT(!pin.n || (pin.n == n && kind <= DE__P2_LEFT));
	switch (kind) {
	case DE__P2_NOW:
		phase2(ctx, n, pin);
		break;
	case DE__P2_LEFT:
		files_left(ctx, n, pin);
		break;
	case DE__P2_POOL:
		n->work.fn = pool_now_task;
		de__pool_submit(&ctx->pool, &n->work, 1);
		break;
	case DE__P2_POOL_GATED:
		de__lock(ctx);
		n->fl.p2sub = 1;
		n->work.fn = pool_gated_task;
		de__unlock(ctx);
		de__pool_submit(&ctx->pool, &n->work, 1);
		break;
	}
}

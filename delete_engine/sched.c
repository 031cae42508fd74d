/*
 * sched.c - the parallel schedule.
 *
 * A directory is a task on the pool: scan it (scan.c), start its child
 * directories, then phase 2 unlinks its files, in chunks shared between
 * workers when it is big.  In a narrow tree the ready queue lets one
 * thread read ahead while another unlinks (run_phase2).  When a node's
 * last reference drops, its directory is removed from its parent and the
 * parent's reference dropped in turn, iteratively, so a 10,000-level
 * chain unwinds without recursion.
 *
 * Tree lock (ctx->mu) protects node state/refs/kept, the deferred
 * stack, the event and ready queues and ctx counters.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Queue an event for the unordered emitter.  Tree lock held.  The emitter
 * is woken once per EV_WAKE_EVENTS events or EV_WAKE_ENTS listed entries
 * (what its queued listings hold, so the memory they keep stays
 * bounded), not per event; it also wakes at every progress tick and when
 * the root is final, so reports are late by at most progress_ms, and
 * only reports: removal never waits for the emitter.
 */
#define EV_WAKE_EVENTS	64u
#define EV_WAKE_ENTS	16384u

static void ev_push(de_ctx *ctx, struct de__node *n, int kind)
{
	struct de__ev *ev = kind == DE__EV_FILES ? &n->ev_files : &n->ev_self;

	ev->node = n;
	ev->kind = kind;
	FIFO_APPEND(ctx->run.ev_head, ctx->run.ev_tail, ev, next);
	ctx->run.ev_count++;
	if (kind == DE__EV_FILES)
		ctx->run.ev_ents += n->nents;
	if (ctx->run.ev_count >= EV_WAKE_EVENTS || ctx->run.ev_ents >= EV_WAKE_ENTS)
		de__wake(ctx);
}

/*
 * Remove name under dfd (unlinkat with flags), after its slot of
 * de_config.rate when pace is set.  Counts it for progress; on the calling
 * thread, which sometimes runs a directory's task itself (run.c
 * need_scanned(), deferred scans), every 64th removal also lets the run
 * deliver progress (ctx->run.tick): the progress hook is how the caller sends
 * keep-alives, and must not wait until a huge or rate-limited directory
 * is done, or a remote --timeout ends the run.  Returns 0 or a negative
 * errno.
 */
int de__remove_at(de_ctx *ctx, int dfd, const char *name, int flags,
		  int pace)
{
	int rc;

	if (pace)
		de__pace(ctx);
	rc = de__unlinkat(ctx, dfd, name, flags);
	if (rc)
		return rc;
	__atomic_add_fetch(&ctx->run.unlinked, 1, __ATOMIC_RELAXED);
	/* Only the calling thread touches caller_ticks; it reads the clock
	 * once per 64 of its removals, not per file. */
	if (de__is_caller(ctx) &&
	    (++ctx->run.caller_ticks & 63) == 0)
		ctx->run.tick(ctx);
	return 0;
}

/*
 * Scan n (scan.c); in hook mode a node it could not enter is finished
 * here at once (NS_FINAL, and n may be freed by the time this returns 0).
 * Returns 1 when n is left pinned (only with keep_pin), else 0.
 */
int de__scan(de_ctx *ctx, struct de__node *n, void *buf, int keep_pin)
{
	int rc = de__scan_node(ctx, n, buf, keep_pin);

	if (rc & DE__SCAN_FINISH) {
		de__phase2(ctx, n, rc & 1);	/* hands the pin over */
		return 0;
	}
	return rc;
}

/*
 * Unlink non-directory e of n through fd (n's pinned fd), after its slot
 * of de_config.rate when pace is set, and record the result in e.
 * Returns 1 when e was not removed (the caller marks n kept).  Both
 * schedules remove a file this way: the workers (unlink_range) and the
 * calling thread in a serial run (walk.c serial_file).
 */
int de__unlink_ent(de_ctx *ctx, struct de__node *n, int fd,
		   struct de__ent *e, int pace)
{
	int rc = de__remove_at(ctx, fd, de__ent_name(n, e), 0, pace);

	e->res = (uint8_t)de__rm_result(rc, &e->err);
	e->op = e->res == DE_R_FAILED ? DE_OP_UNLINK : 0;
	e->done = 1;
	return e->res == DE_R_FAILED;
}

/*
 * rmdir n, emptied, in its parent, pinning the parent for it (through
 * n's ".." when nfd, n's pinned fd, is >= 0 and the parent's fd was
 * closed).  The parent stays pinned when *ppinned says so, for the caller
 * to unpin.  Returns the result (de__rm_result()), with *op and *err set
 * on failure.  Both schedules remove a directory this
 * way: the last reference (de__node_release) and the calling thread in a
 * serial run (walk.c serial_dir).
 */
int de__rmdir_node(de_ctx *ctx, struct de__node *n, int nfd, int *ppinned,
		   int *op, int *err)
{
	int pfd, rc, res;

	/* It left the tree (de__check_place): its name there, if any, is
	 * now another's. */
	if (__atomic_load_n(&n->placed, __ATOMIC_ACQUIRE) == 2) {
		*ppinned = 0;
		return DE_R_VANISHED;
	}
	pfd = de__node_pin(ctx, n->parent, nfd);
	*ppinned = pfd >= 0;
	rc = pfd < 0 ? pfd : de__remove_at(ctx, pfd, n->name, AT_REMOVEDIR, 1);
	res = de__rm_result(rc, err);
	if (res == DE_R_FAILED)
		*op = DE_OP_RMDIR;
	return res;
}

/* Was n not entered because opening it was refused (EACCES, EPERM)?  It
 * may be empty: de__rmdir_unread() tries its rmdir, and rm -i asks about
 * it as about one it could not read (walk.c). */
int de__unopened_for_perm(const struct de__node *n)
{
	return n->skip_scan && n->res == DE_R_FAILED && n->op == DE_OP_OPEN &&
	       (n->err == EACCES || n->err == EPERM);
}

/*
 * The result of n, not entered (n->skip_scan), from its res, op and err.
 * One that could not be opened for want of permission (EACCES, EPERM:
 * mode 0, 0100, a-r) may still be empty, and rmdir asks nothing of it,
 * only of its parent: so that is tried, as GNU rm does, but not in a dry
 * run, which cannot know whether it is empty, nor after a cancel.
 * Removed, the result is DE_R_REMOVED with the open's op and err kept in
 * *op and *err, so that a front end may still say that the open failed
 * (rsync warns as stock does, whose opendir fails before its rmdir
 * works).  When the rmdir fails too (ENOTEMPTY: something is in it),
 * the open's failure stands.  The parent is left pinned for the caller
 * when *ppinned says so, as by de__rmdir_node().
 */
int de__rmdir_unread(de_ctx *ctx, struct de__node *n, int *ppinned,
		     int *op, int *err)
{
	int rop = 0, rerr = 0, res;

	*ppinned = 0;
	*op = n->op;
	*err = n->err;
	if (!de__unopened_for_perm(n) || (ctx->run.flags & DE_F_DRY_RUN) ||
	    de__cancelled(ctx))
		return n->res;
	res = de__rmdir_node(ctx, n, -1, ppinned, &rop, &rerr);
	if (res == DE_R_VANISHED) {
		*op = 0;
		*err = 0;
	}
	return res == DE_R_FAILED ? n->res : res;
}

/*
 * Where n is: 1 in its parent still, 2 moved out (by itself or with an
 * ancestor), or a negative errno when that cannot be told.  In its
 * parent means: the parent's entry n->name is the directory n was read
 * through (lstat's dev/ino against fstat's), or, when the parent's fd is
 * not held but n's is, n's ".." is the parent, which costs no reopen of
 * the parent (a serial walk down a chain deeper than the fd budget has
 * let the parent's fd go).  The root is where the caller put it.  Told
 * once, then remembered (n->placed).  A node's own check comes before
 * its phase 2 makes its children, but children made early (run_phase2's
 * read-ahead, global.c's window) may ask first: then they tell their
 * ancestors too, up to the nearest one told, which is at most as many
 * as were read ahead.
 */
static int place_of(de_ctx *ctx, struct de__node *n)
{
	struct de__node *p = n->parent;
	struct de__st st;
	int rc, pfd = -1, nfd = -1, zero = 0;

	if (!p || n->base)
		return 1;
	rc = __atomic_load_n(&n->placed, __ATOMIC_ACQUIRE);
	if (rc)
		return rc;
	rc = place_of(ctx, p);
	if (rc == 1) {
		de__lock(ctx);
		if (p->fd >= 0) {
			p->pins++;
			pfd = p->fd;
		} else if (n->fd >= 0) {
			n->pins++;
			nfd = n->fd;
		}
		de__unlock(ctx);
		if (pfd < 0 && nfd < 0)
			pfd = de__node_pin(ctx, p, -1);
		if (nfd >= 0) {
			rc = de__lstatat(ctx, nfd, "..", &st);
			de__node_unpin(ctx, n);
			if (rc == 0)
				rc = st.dev == p->dev && st.ino == p->ino ? 1 : 2;
		} else if (pfd >= 0) {
			rc = de__lstatat(ctx, pfd, n->name, &st);
			de__node_unpin(ctx, p);
			if (rc == 0)
				rc = st.dev == n->dev && st.ino == n->ino ? 1 : 2;
		} else {
			rc = pfd;
		}
		/* Its name gone, or the parent's (node.c: ESTALE, the
		 * parent's name holds another directory). */
		if (rc == -ENOENT || rc == -ESTALE)
			rc = 2;
	}
	if (rc < 0)
		return rc;
	if (!__atomic_compare_exchange_n(&n->placed, &zero, rc, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		rc = zero;
	return rc;
}

/*
 * Check, once, before any entry of n (opened and listed) is removed and
 * before its subdirectories are made, that n is still where it was
 * listed (place_of).  Its owner may have moved it out of the tree (a
 * rename) since it was opened: through the fd it holds, the engine would
 * then empty it outside the tree it was given, where stock rsync, which
 * goes by path, deletes nothing of it.  A move after this check is not
 * seen.  Returns 0 when n is in place.  Else 1, with every entry of n
 * not decided yet (and not a subdirectory made already, which asks for
 * itself) decided: VANISHED when n moved, and n itself is then reported
 * VANISHED without an rmdir (de__rmdir_node); FAILED (op STAT) when
 * where it is cannot be told, and n is kept.  The caller removes
 * nothing of n then, and makes none of its children.
 */
int de__check_place(de_ctx *ctx, struct de__node *n)
{
	int rc = place_of(ctx, n);
	size_t i;

	if (rc == 1)
		return 0;
	for (i = 0; i < n->nents; i++) {
		struct de__ent *e = &n->ents[i];

		if (e->child || e->done)
			continue;
		e->done = 1;
		if (e->action == DE_A_KEEP) {
			e->res = DE_R_KEPT;
		} else if (e->action == DE_A_DONE) {
			e->res = DE_R_DONE;
		} else if (rc == 2) {
			e->res = DE_R_VANISHED;
		} else {
			e->res = DE_R_FAILED;
			e->op = DE_OP_STAT;
			e->err = -rc;
		}
	}
	if (rc != 2)
		de__node_keep(ctx, n);
	return 1;
}

/*
 * Unlink the listed entries idx[0..k) of n through fd.  idx NULL: there
 * was no memory for an order (de__inode_order()), so every non-directory
 * to delete, in listing order; an allocation failure is not the unlink's
 * error to report.
 */
static void unlink_range(de_ctx *ctx, struct de__node *n, int fd,
			 const uint32_t *idx, size_t k)
{
	int kept = 0;
	size_t i, end = idx ? k : n->nents;

	for (i = 0; i < end; i++) {
		struct de__ent *e = &n->ents[idx ? idx[i] : i];

		if (!idx && (e->type == DE_T_DIR || e->action != DE_A_DELETE ||
			     e->done))
			continue;

		if (de__cancelled(ctx)) {
			e->res = DE_R_SKIPPED;
			kept = 1;
			continue;
		}
		kept |= de__unlink_ent(ctx, n, fd, e, 1);
	}
	if (kept) {
		de__lock(ctx);
		n->kept = 1;
		de__unlock(ctx);
	}
}

/* One unlink chunk is done; the last one publishes NS_FILES. */
static void files_done(de_ctx *ctx, struct de__node *n, uint32_t *idx)
{
	int last;

	de__lock(ctx);
	last = --n->chunks == 0;
	if (last) {
		n->state = NS_FILES;
		if (!de__ordered(ctx) && n->nents)
			ev_push(ctx, n, DE__EV_FILES);
		de__signal(ctx);
	}
	de__unlock(ctx);
	if (last)
		free(idx);
}

static void chunk_task(struct de__work *w, void *buf)
{
	struct de__chunk *c = (void *)((char *)w - offsetof(struct de__chunk,
							    work));
	struct de__node *n = c->node;
	de_ctx *ctx = n->ctx;
	int fd;

	(void)buf;
	/* The submitter pinned n for us, so its fd is open. */
	de__lock(ctx);
	fd = n->fd;
	de__unlock(ctx);
	unlink_range(ctx, n, fd, c->idx + c->start, c->n);
	files_done(ctx, n, c->idx);
	free(c);
	de__node_release(ctx, n, 1);
}

/* Queue or defer the scan of child c.  Tree lock not held. */
void de__schedule(de_ctx *ctx, struct de__node *c)
{
	de__lock(ctx);
	if (de__ordered(ctx) && ctx->run.win_live >= ctx->run.plan.win_max) {
		c->deferred = 1;
		DLIST_PUSH(ctx->run.deferred, c, dnext, dprev);
		de__unlock(ctx);
		return;
	}
	c->state = NS_QUEUED;
	if (de__ordered(ctx)) {
		c->inwin = 1;
		ctx->run.win_live++;
	}
	if (de__serial(ctx))
		ctx->run.scans_inflight++;
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
	DLIST_DEL(ctx->run.deferred, c, dnext, dprev);
	c->deferred = 0;
	c->state = NS_QUEUED;
	if (in_window) {
		c->inwin = 1;
		ctx->run.win_live++;
	}
	if (de__serial(ctx))
		ctx->run.scans_inflight++;
}

/* Submit deferred scans while the window has room. */
void de__pump(de_ctx *ctx)
{
	struct de__node *c;

	de__lock(ctx);
	while ((c = ctx->run.deferred) && ctx->run.win_live < ctx->run.plan.win_max &&
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

	for (i = 0; i < n->nents; i++) {
		struct de__ent *e = &n->ents[i];
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
	n->refs += nkids;
	n->unopened += nkids;
	n->kept |= kept;
	de__unlock(ctx);
}

/* Schedule n's children, last first so the first lands on top. */
static void schedule_children(de_ctx *ctx, struct de__node *n)
{
	size_t i;

	for (i = n->nents; i-- > 0;)
		if (n->ents[i].child)
			de__schedule(ctx, n->ents[i].child);
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
	if (!n->early) {
		de__make_children(ctx, n);
		schedule_children(ctx, n);
		return;
	}
	for (i = n->nents; i-- > 0;)
		if (n->ents[i].child && n->ents[i].child->state == NS_NEW)
			de__schedule(ctx, n->ents[i].child);
}

/* Phase 2 of n has begun: one unlink chunk (its own) pending. */
static void p2_begin(de_ctx *ctx, struct de__node *n)
{
	de__lock(ctx);
	n->p2sub = 1;
	n->state = NS_P2;
	n->chunks = 1;
	de__signal(ctx);
	de__unlock(ctx);
}

/*
 * n's fd cannot be had (fd, a negative errno): its fd was closed for the
 * budget and n is gone when reopened, so are its files (ENOENT), or
 * they fail.
 */
static void unreachable_files(de_ctx *ctx, struct de__node *n, int fd)
{
	int res = fd == -ENOENT ? DE_R_VANISHED : DE_R_FAILED;
	size_t i;

	for (i = 0; i < n->nents; i++) {
		struct de__ent *e = &n->ents[i];

		if (e->type == DE_T_DIR || e->done || e->action != DE_A_DELETE)
			continue;
		e->res = (uint8_t)res;
		if (res == DE_R_FAILED) {
			e->op = DE_OP_OPEN;
			e->err = -fd;
		}
		e->done = 1;
	}
	if (res == DE_R_FAILED)
		de__node_keep(ctx, n);
}

void de__node_keep(de_ctx *ctx, struct de__node *n)
{
	de__lock(ctx);
	n->kept = 1;
	de__unlock(ctx);
}

void de__node_running(de_ctx *ctx, struct de__node *n)
{
	de__lock(ctx);
	n->state = NS_RUNNING;
	de__unlock(ctx);
}

/*
 * Phase 2 of scanned node n for a schedule that unlinked its files itself
 * (global.c): unlink what is left of them, in listing order, publish them
 * and drop n's own reference.  Its children were made already.  fd is
 * n's fd, pinned by the caller and handed over (so that n's removal, if
 * this is its last reference, reopens its parent as ".."), or -1.
 */
void de__files_run(de_ctx *ctx, struct de__node *n, int fd)
{
	size_t i;
	int pinned = fd >= 0;

	for (i = 0; i < n->nents; i++) {
		const struct de__ent *e = &n->ents[i];

		if (e->type != DE_T_DIR && !e->done && e->action == DE_A_DELETE)
			break;
	}
	if (i < n->nents) {
		if (!pinned)
			fd = de__node_pin(ctx, n, -1);
		pinned = fd >= 0;
		if (pinned)
			unlink_range(ctx, n, fd, NULL, 0);
		else
			unreachable_files(ctx, n, fd);
	}
	p2_begin(ctx, n);
	files_done(ctx, n, NULL);
	de__node_release(ctx, n, pinned);
}

/*
 * Whether n's k files to unlink are cut into one chunk per worker (of at
 * least DE__CHUNK_MIN files): with at least split_min of them, or with
 * split_idle_min when no task is queued, which the other workers would
 * otherwise wait for (with tasks queued they are better spent on other
 * directories).  policy.c de__plan sets the bounds where
 * splitting pays at all.
 */
static int want_split(de_ctx *ctx, size_t k)
{
	return (k >= (size_t)ctx->run.plan.split_min ||
		(k >= (size_t)ctx->run.plan.split_idle_min &&
		 __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) == 0)) &&
	       ctx->run.plan.threads > 1 && k >= 2 * DE__CHUNK_MIN;
}

/*
 * Hand all but the first chunk of n's files (idx, k of them, on fd) to
 * the pool; returns how many the caller unlinks itself.  Each chunk holds
 * a reference and a pin of n; a chunk that cannot be allocated is
 * unlinked here.
 */
static size_t split_files(de_ctx *ctx, struct de__node *n, int fd,
			  uint32_t *idx, size_t k)
{
	unsigned nch = ctx->run.plan.threads, i;
	size_t per, start;

	if (k / nch < DE__CHUNK_MIN)
		nch = (unsigned)(k / DE__CHUNK_MIN);
	per = k / nch;
	start = per;

	de__lock(ctx);
	n->chunks += nch - 1;
	n->refs += nch - 1;
	n->pins += nch - 1;
	de__unlock(ctx);
	for (i = 1; i < nch; i++) {
		struct de__chunk *c = malloc(sizeof(*c));
		size_t cnt = i == nch - 1 ? k - start : per;

		if (!c) {
			/* Do it ourselves. */
			unlink_range(ctx, n, fd, idx + start, cnt);
			de__lock(ctx);
			n->chunks--;
			n->refs--;
			n->pins--;
			de__unlock(ctx);
		} else {
			c->node = n;
			c->idx = idx;
			c->start = start;
			c->n = cnt;
			c->work.fn = chunk_task;
			de__pool_submit(&ctx->pool, &c->work, 1);
		}
		start += cnt;
	}
	return per;
}

/*
 * Phase 2 of a scanned node whose children are made and scheduled
 * already (n->early), as a work item, bypassing the phase-2 gate: the
 * global schedule hands its window to the pool this way (global.c).
 */
void de__files_task(struct de__work *w, void *buf)
{
	struct de__node *n = (void *)((char *)w -
				      offsetof(struct de__node, work));

	(void)buf;
	de__phase2(n->ctx, n, 0);
}

/*
 * Phase 2 of a scanned node, on a worker (or inline): create and schedule
 * the children, unlink the non-directories (split across workers when the
 * directory is huge), then drop n's own reference.  pinned: n is pinned.
 */
void de__phase2(de_ctx *ctx, struct de__node *n, int pinned)
{
	uint32_t *idx = NULL;
	size_t k = 0;
	int fd = -1;
	/*
	 * Read once: children made must also be scheduled.  Children made
	 * early (run_phase2) are scheduled already, so those files must be
	 * unlinked too (a cancel marks them SKIPPED in unlink_range).
	 */
	int early = n->early;
	int stop = !early && (n->skip_scan || de__cancelled(ctx));

	if (!stop) {
		fd = pinned ? n->fd : de__node_pin(ctx, n, -1);
		if (!pinned && fd >= 0)
			pinned = 1;
		/* Nothing of n is removed where it left the tree; children
		 * made early ask for themselves. */
		if (fd >= 0 && de__check_place(ctx, n))
			stop = 1;
		else if (!early)
			de__make_children(ctx, n);
	}
	p2_begin(ctx, n);
	if (stop) {
		files_done(ctx, n, NULL);
		de__node_release(ctx, n, pinned);
		return;
	}
	if (!early)
		schedule_children(ctx, n);
	idx = fd < 0 ? NULL : de__inode_order(n, &k);
	if (fd < 0) {
		unreachable_files(ctx, n, fd);
		files_done(ctx, n, idx);
		de__node_release(ctx, n, pinned);
		return;
	}
	if (idx && want_split(ctx, k))
		k = split_files(ctx, n, fd, idx, k);
	unlink_range(ctx, n, fd, idx, k);
	files_done(ctx, n, idx);
	de__node_release(ctx, n, pinned);
}

/*
 * Drop one reference of n (pinned: the caller holds a pin on n, which is
 * handed over).  The last reference removes n from its parent, publishes
 * NS_FINAL and continues with the parent.
 */
void de__node_release(de_ctx *ctx, struct de__node *n, int pinned)
{
	for (;;) {
		struct de__node *p = n->parent;
		int last, ppinned = 0, res, op = 0, err = 0;

		int cfd = -1;

		/*
		 * Unpin in the same critical section: once the lock is
		 * dropped, the last holder may finish n and the calling
		 * thread free it.
		 */
		de__lock(ctx);
		last = --n->refs == 0;
		if (!last && pinned)
			cfd = de__unpin_locked(ctx, n);
		de__unlock(ctx);
		if (!last) {
			if (cfd >= 0)
				close(cfd);
			return;
		}
		if (!p) {
			de__lock(ctx);
			n->state = NS_FINAL;
			de__wake(ctx);
			de__unlock(ctx);
			return;
		}
		if (n->skip_scan) {
			res = de__rmdir_unread(ctx, n, &ppinned, &op, &err);
		} else if (de__cancelled(ctx)) {
			res = DE_R_SKIPPED;
		} else if (n->kept) {
			res = DE_R_NOT_EMPTY;
		} else {
			res = de__rmdir_node(ctx, n, pinned ? n->fd : -1,
					     &ppinned, &op, &err);
		}
		if (pinned)
			de__node_unpin(ctx, n);
		de__lock(ctx);
		n->res = (uint8_t)res;
		n->op = (uint8_t)op;
		n->err = err;
		n->state = NS_FINAL;
		if (res != DE_R_REMOVED && res != DE_R_VANISHED)
			p->kept = 1;
		if (!de__ordered(ctx))
			ev_push(ctx, n, DE__EV_SELF);
		de__signal(ctx);
		de__unlock(ctx);
		/* n may be freed by the emitter from here on. */
		n = p;
		pinned = ppinned;
	}
}

/*
 * Look-ahead bounds of a scanning thread along a chain (run_phase2): at
 * most ctx->run.plan.ahead_max scanned nodes (each holds a pinned fd; see
 * run.c reset_run) and READY_ENTS_MAX listed entries (about 40 bytes
 * plus the name each) wait on the ready queue.
 */
#define READY_ENTS_MAX	65536u

/*
 * Take c, a child just made, to scan it on this thread without queueing
 * it.  Tree lock held.  Returns 0 when the ordered window is full (the
 * caller schedules c instead, which defers it).
 */
static int take_child(de_ctx *ctx, struct de__node *c)
{
	if (de__ordered(ctx)) {
		if (ctx->run.win_live >= ctx->run.plan.win_max)
			return 0;
		c->inwin = 1;
		ctx->run.win_live++;
	}
	c->state = NS_RUNNING;
	return 1;
}

/* n's first child to delete, or NULL.  n's listing is complete. */
static struct de__node *first_child(struct de__node *n)
{
	size_t i;

	for (i = 0; i < n->nents; i++)
		if (n->ents[i].child)
			return n->ents[i].child;
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

	if (!gate || ctx->run.plan.dir_hooks || n->skip_scan || de__cancelled(ctx) ||
	    __atomic_load_n(&ctx->sched.p2_active, __ATOMIC_RELAXED) <= 0 ||
	    __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) >= gate ||
	    __atomic_load_n(&ctx->sched.nready, __ATOMIC_RELAXED) >=
	    ctx->run.plan.ahead_max ||
	    __atomic_load_n(&ctx->sched.ready_ents, __ATOMIC_RELAXED) >=
	    READY_ENTS_MAX)
		return NULL;
	de__make_children(ctx, n);
	n->early = 1;
	c = first_child(n);
	for (i = n->nents; i-- > 0;)
		if (n->ents[i].child && n->ents[i].child != c)
			de__schedule(ctx, n->ents[i].child);
	return c;
}

/*
 * Phase 2 of n, then of every node on the ready queue, until it is empty;
 * the caller counted itself in sched.p2_active, which this leaves.
 */
static void unlink_ready(de_ctx *ctx, struct de__node *n, int pinned)
{
	for (;;) {
		de__phase2(ctx, n, pinned);
		de__lock(ctx);
		n = ctx->sched.ready;
		if (!n) {
			__atomic_store_n(&ctx->sched.p2_active,
					 ctx->sched.p2_active - 1, __ATOMIC_RELAXED);
			de__unlock(ctx);
			return;
		}
		ctx->sched.ready = n->rnext;
		if (!ctx->sched.ready)
			ctx->sched.ready_tail = NULL;
		__atomic_store_n(&ctx->sched.nready, ctx->sched.nready - 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->sched.ready_ents, ctx->sched.ready_ents - n->nents,
				 __ATOMIC_RELAXED);
		n->rnext = NULL;
		pinned = n->rpinned;
		de__unlock(ctx);
	}
}

/*
 * Phase 2 of scanned node n (pinned: n is pinned), under phase-2
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
				   int pinned)
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
		if (ctx->run.plan.p2_help && !n->early &&
		    ctx->sched.nready >= ctx->run.plan.ahead_max) {
			de__unlock(ctx);
			de__phase2(ctx, n, pinned);
			return NULL;
		}
		n->rpinned = pinned;
		FIFO_APPEND(ctx->sched.ready, ctx->sched.ready_tail, n, rnext);
		__atomic_store_n(&ctx->sched.nready, ctx->sched.nready + 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->sched.ready_ents, ctx->sched.ready_ents + n->nents,
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
	unlink_ready(ctx, n, pinned);
	return NULL;
}

/*
 * The work function of a directory: scan, then (worker mode) phase 2,
 * then the child run_phase2 handed back, if any, on the same thread.
 */
void de__task(struct de__work *w, void *buf)
{
	struct de__node *n = (void *)((char *)w -
				      offsetof(struct de__node, work));
	de_ctx *ctx = n->ctx;
	int pinned;

	de__lock(ctx);
	n->state = NS_RUNNING;
	de__unlock(ctx);
	if (de__serial(ctx) || ctx->run.plan.dir_hooks) {
		de__scan(ctx, n, buf, 0);
		return;
	}
	/*
	 * The calling thread (which runs a task itself only when the walk
	 * needs a directory no worker has started) must not stay in
	 * run_phase2 emptying the ready queue: it has reports and progress
	 * calls to make.  It bypasses the gate instead.
	 */
	if (de__is_caller(ctx)) {
		pinned = de__scan(ctx, n, buf, 1);
		de__phase2(ctx, n, pinned);
		return;
	}
	do {
		pinned = de__scan(ctx, n, buf, 1);
		n = run_phase2(ctx, n, pinned);
	} while (n);
}

/* Phase 2 as a work item (hook mode, after enter_dir decided). */
void de__p2task(struct de__work *w, void *buf)
{
	struct de__node *n = (void *)((char *)w -
				      offsetof(struct de__node, work));

	(void)buf;
	/* Hook mode: run_phase2 never makes children early, so it never
	 * hands one back here. */
	(void)run_phase2(n->ctx, n, 0);
}

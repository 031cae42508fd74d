/*
 * unlink.c - what removing a directory comes to: its files unlinked (in
 * one inode order, in chunks shared between workers when it is huge),
 * the check before that it is still where it was listed, and when its
 * last reference drops, its rmdir, iteratively up the tree, so a
 * 10,000-level chain unwinds without recursion.  sched.c decides when
 * (the unlink phase); walk.c and global.c remove through the same
 * calls.
 *
 * Tree lock (ctx->mu) protects node state/refs/kept/chunks and the event
 * queue.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

/* One share of a huge directory's unlinks, a work item of its own. */
struct chunk {
	struct de__work work;
	struct de__node *node;
	struct de__pin pin;	/* of node, the chunk's own */
	uint32_t *idx;		/* shared; freed by the last chunk */
	size_t start, n;
};

/*
 * Queue an event for the unordered emitter.  Tree lock held.  The
 * emitter is woken once per DE__EV_WAKE_EVENTS events or
 * DE__EV_WAKE_ENTS listed entries (what its queued listings hold, so the
 * memory they keep stays bounded), not per event; it also wakes at
 * every progress tick and when the root is final, so reports are late by
 * at most progress_ms, and only reports: removal never waits for the
 * emitter.
 */
static void ev_push(de_ctx *ctx, struct de__node *n, int kind)
{
	struct de__ev *ev = kind == DE__EV_FILES ? &n->ev_files : &n->ev_self;

	ev->node = n;
	ev->kind = kind;
	FIFO_APPEND(ctx->run.ev.head, ctx->run.ev.tail, ev, next);
	ctx->run.ev.count++;
	if (kind == DE__EV_FILES)
		ctx->run.ev.ents += n->ls.nents;
	if (ctx->run.ev.count >= DE__EV_WAKE_EVENTS ||
	    ctx->run.ev.ents >= DE__EV_WAKE_ENTS)
		de__wake(ctx);
}

/*
 * Remove name under dfd (unlinkat with flags), after its slot of
 * de_config.rate when pace is set.  Counts it for progress; on the calling
 * thread, which sometimes runs a directory's task itself (run.c
 * need_scanned(), deferred scans), every 64th removal also lets the run
 * deliver progress (ctx->run.rep.tick): the progress hook is how the caller sends
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
	__atomic_add_fetch(&ctx->run.rep.unlinked, 1, __ATOMIC_RELAXED);
	/* Only the calling thread touches caller_ticks; it reads the clock
	 * once per 64 of its removals, not per file. */
	if (de__is_caller(ctx) &&
	    (++ctx->run.rep.caller_ticks & (DE__TICK_REMOVALS - 1)) == 0)
		ctx->run.rep.tick(ctx);
	return 0;
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
int de__rmdir_node(de_ctx *ctx, struct de__node *n, const struct de__pin *np,
		   struct de__pin *pp, int *op, int *err)
{
	int rc, res;

	/* It left the tree (de__check_place): its name there, if any, is
	 * now another's. */
	if (__atomic_load_n(&n->fl.placed, __ATOMIC_ACQUIRE) == 2) {
		*pp = DE__NO_PIN;
		return DE_R_VANISHED;
	}
	*pp = de__pin_take(ctx, n->parent, np && np->n ? np->fd : -1);
	rc = !pp->n ? pp->fd :
	     de__remove_at(ctx, pp->fd, n->name, AT_REMOVEDIR, 1);
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
	return n->fl.skip_scan && n->res == DE_R_FAILED && n->op == DE_OP_OPEN &&
	       (n->err == EACCES || n->err == EPERM);
}

/*
 * The result of n, not entered (n->fl.skip_scan), from its res, op and err.
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
int de__rmdir_unread(de_ctx *ctx, struct de__node *n, struct de__pin *pp,
		     int *op, int *err)
{
	int rop = 0, rerr = 0, res;

	*pp = DE__NO_PIN;
	*op = n->op;
	*err = n->err;
	if (!de__unopened_for_perm(n) || (ctx->run.flags & DE_F_DRY_RUN) ||
	    de__cancelled(ctx))
		return n->res;
	res = de__rmdir_node(ctx, n, NULL, pp, &rop, &rerr);
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
 * once, then remembered (n->fl.placed).  A node's own check comes before
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

	if (!p || n->fl.base)
		return 1;
	rc = __atomic_load_n(&n->fl.placed, __ATOMIC_ACQUIRE);
	if (rc)
		return rc;
	rc = place_of(ctx, p);
	if (rc == 1) {
		de__lock(ctx);
		if (p->fd >= 0) {
			p->cnt.pins++;
			pfd = p->fd;
		} else if (n->fd >= 0) {
			n->cnt.pins++;
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
	if (!__atomic_compare_exchange_n(&n->fl.placed, &zero, rc, 0,
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
	for (i = 0; i < n->ls.nents; i++) {
		struct de__ent *e = &n->ls.ents[i];

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

/* A huge directory's order idx, as de__fill_runs (order.c) reads it. */
struct list_order {
	struct de__node *n;
	const uint32_t *idx;
	int fd;
};

static uint64_t list_ino(const void *arg, size_t i)
{
	const struct list_order *o = arg;

	return o->n->ls.ents[o->idx[i]].ino;
}

static int list_filler(const void *arg, size_t i, struct de__ino_ent *f)
{
	const struct list_order *o = arg;
	const struct de__ent *e = &o->n->ls.ents[o->idx[i]];

	if (e->type != DE_T_FILE)
		return 0;
	f->ino = e->ino;
	f->n = o->n;
	f->i = o->idx[i];
	f->k = 0;
	return 1;
}

static int list_touch(de_ctx *ctx, const void *arg,
		      const struct de__ino_ent *f)
{
	int fd = ((const struct list_order *)arg)->fd;

	return f->k == DE__GIVEN ? de__touch_given(ctx, fd, f) :
				   de__touch_listed(ctx, fd, f);
}

/*
 * Unlink the listed entries idx[0..k) of n through fd.  idx NULL: there
 * was no memory for an order (de__inode_order()), so every non-directory
 * to delete, in listing order; an allocation failure is not the unlink's
 * error to report.  With fill, where a huge directory's order is cut
 * into runs, each run's holes are filled from the runs after it, and
 * the root's last ones from the caller's next call (de_opts.fill):
 * global.c, "Filling the holes", says why.
 */
static void unlink_range(de_ctx *ctx, struct de__node *n, int fd,
			 const uint32_t *idx, size_t k, int fill)
{
	struct list_order o = { .n = n, .idx = idx, .fd = fd };
	struct de__fill_runs r = {
		.n = k, .ino = list_ino, .filler = list_filler,
		.touch = list_touch, .arg = &o,
	};
	struct de__ino_ent *given = NULL;
	int kept = 0;
	size_t i, end = idx ? k : n->ls.nents;

	if (fill && idx)
		de__push_start(ctx, k);
	if (fill && idx && n == ctx->run.root)
		r.after = given = de__given(ctx, n, NULL, &r.nafter);
	for (i = 0; i < end; i++) {
		struct de__ent *e = &n->ls.ents[idx ? idx[i] : i];

		if (!idx && (e->type == DE_T_DIR || e->action != DE_A_DELETE ||
			     e->done))
			continue;

		if (de__cancelled(ctx)) {
			e->res = DE_R_SKIPPED;
			kept = 1;
			continue;
		}
		if (fill && idx)
			de__fill_runs_at(ctx, &r, i);
		kept |= de__unlink_ent(ctx, n, fd, e, 1);
	}
	de__fill_runs_end(&r);
	free(given);
	if (kept) {
		de__lock(ctx);
		n->cnt.kept = 1;
		de__unlock(ctx);
	}
}

/* One unlink chunk is done; the last one publishes NS_FILES. */
static void files_done(de_ctx *ctx, struct de__node *n, uint32_t *idx)
{
	int last;

	de__lock(ctx);
	last = --n->cnt.chunks == 0;
	if (last) {
		de__set_state(n, NS_FILES);
		if (!de__ordered(ctx) && n->ls.nents)
			ev_push(ctx, n, DE__EV_FILES);
		de__signal(ctx);
	}
	de__unlock(ctx);
	if (last)
		free(idx);
}

static void chunk_task(struct de__work *w, void *buf)
{
	struct chunk *c = (void *)((char *)w - offsetof(struct chunk, work));
	struct de__node *n = c->node;
	struct de__pin pin = de__pin_move(&c->pin);

	(void)buf;
	unlink_range(n->ctx, n, pin.fd, c->idx + c->start, c->n, 0);
	files_done(n->ctx, n, c->idx);
	free(c);
	de__node_release(n->ctx, n, pin);
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

	for (i = 0; i < n->ls.nents; i++) {
		struct de__ent *e = &n->ls.ents[i];

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
	n->cnt.kept = 1;
	de__unlock(ctx);
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
 * Hand all but the first chunk of n's files (idx, k of them, on fd,
 * pinned) to the pool; returns how many the caller unlinks itself.  Each
 * chunk holds a reference and a pin of n, of its own; a chunk that
 * cannot be allocated is unlinked here.
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
	n->cnt.chunks += nch - 1;
	n->cnt.refs += nch - 1;
	n->cnt.pins += nch - 1;
	de__unlock(ctx);
	for (i = 1; i < nch; i++) {
		struct chunk *c = malloc(sizeof(*c));
		size_t cnt = i == nch - 1 ? k - start : per;

		if (!c) {
			/* Do it ourselves. */
			unlink_range(ctx, n, fd, idx + start, cnt, 0);
			de__lock(ctx);
			n->cnt.chunks--;
			n->cnt.refs--;
			n->cnt.pins--;
			de__unlock(ctx);
		} else {
			c->node = n;
			c->pin = (struct de__pin){ n, fd };
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
 * Drop one reference of n, and pin, the caller's pin of n if held,
 * handed over.  The last reference removes n from its parent, publishes
 * NS_FINAL and continues with the parent, with the pin of it the rmdir
 * took.
 */
void de__node_release(de_ctx *ctx, struct de__node *n, struct de__pin pin)
{
	DE__ASSERT(!pin.n || pin.n == n);
	for (;;) {
		struct de__node *p = n->parent;
		struct de__pin ppin = DE__NO_PIN;
		int last, res, op = 0, err = 0, cfd = -1;

		/*
		 * Unpin in the same critical section: once the lock is
		 * dropped, the last holder may finish n and the calling
		 * thread free it.
		 */
		de__lock(ctx);
		last = --n->cnt.refs == 0;
		if (!last && pin.n)
			cfd = de__pin_drop_locked(ctx, &pin);
		de__unlock(ctx);
		if (!last) {
			if (cfd >= 0)
				close(cfd);
			return;
		}
		if (!p) {
			/* The root's fd is the caller's: its pin only
			 * counts. */
			if (pin.n)
				de__pin_drop(ctx, &pin);
			de__lock(ctx);
			de__set_state(n, NS_FINAL);
			de__wake(ctx);
			de__unlock(ctx);
			return;
		}
		if (n->fl.skip_scan) {
			res = de__rmdir_unread(ctx, n, &ppin, &op, &err);
		} else if (de__cancelled(ctx)) {
			res = DE_R_SKIPPED;
		} else if (n->cnt.kept) {
			res = DE_R_NOT_EMPTY;
		} else {
			res = de__rmdir_node(ctx, n, &pin, &ppin, &op, &err);
		}
		if (pin.n)
			de__pin_drop(ctx, &pin);
		de__lock(ctx);
		n->res = (uint8_t)res;
		n->op = (uint8_t)op;
		n->err = err;
		de__set_state(n, NS_FINAL);
		if (res != DE_R_REMOVED && res != DE_R_VANISHED)
			p->cnt.kept = 1;
		if (!de__ordered(ctx))
			ev_push(ctx, n, DE__EV_SELF);
		de__signal(ctx);
		de__unlock(ctx);
		/* n may be freed by the emitter from here on. */
		n = p;
		pin = de__pin_move(&ppin);
	}
}

/* See internal.h. */
void de__unlink_files(de_ctx *ctx, struct de__node *n, struct de__pin pin,
		      enum de__files what)
{
	uint32_t *idx = NULL;
	size_t k = 0;

	if (what == DE__FILES_NONE) {
		/* Nothing of n to unlink. */
	} else if (!pin.n) {
		unreachable_files(ctx, n, pin.fd);
	} else if (what == DE__FILES_SORTED) {
		size_t all;

		idx = de__inode_order(n, pin.fd, &k);
		all = k;
		if (idx && want_split(ctx, k))
			k = split_files(ctx, n, pin.fd, idx, k);
		/* Split between workers, the runs are not this thread's;
		 * without the inode sort there are none. */
		unlink_range(ctx, n, pin.fd, idx, k,
			     idx && k == all && de__want_fill(ctx) &&
			     de__want_inode_sort(ctx, n->fstype));
	} else {
		unlink_range(ctx, n, pin.fd, NULL, 0, 0);
	}
	files_done(ctx, n, idx);
	de__node_release(ctx, n, pin);
}

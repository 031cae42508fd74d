/*
 * walk.c - the calling thread's walks of the tree, in canonical order.
 *
 * Modes (chosen per run, policy.c de__plan; run.c starts them):
 *  - unordered (default): workers remove; finished directories are queued
 *    as events, reports come in completion order.
 *  - ordered (DE_F_ORDERED, enter_dir, and the serial cases): the calling
 *    thread walks the tree in canonical order and waits for each entry's
 *    outcome; workers scan and remove ahead of it, at most win_max scanned
 *    directories ahead (memory bound: win_max listings + the walk's path).
 *  - serial (dry run, ask_dir, and max_delete or dispose outside the
 *    global schedule, and any run on btrfs): workers only scan ahead; the
 *    calling thread makes each removal itself, in canonical order, so the
 *    limit is exact, the dispose hook runs when each entry is due, and on
 *    btrfs each directory is emptied just before its rmdir (policy.c
 *    want_serial).  A run in the global schedule whose first reads were
 *    fast goes on serial when it has a limit or hooks.
 *  - batch (ordered, max_delete, and enter_dir and dispose with
 *    DE_F_HOOKS_AHEAD, in the global schedule): the calling thread reads
 *    windows of the tree (global.c), calling enter_dir as it reads, and
 *    walks them in canonical order, gathering what it passes into a
 *    batch; each batch's files are unlinked (or disposed of) in one inode
 *    order, then its rmdirs and reports go in canonical order
 *    (batch_flush).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void batch_flush(de_ctx *ctx);

/*
 * The batch walk needs c, which the windows have not reached: c is the
 * next directory they read, depth first in the walk's order, so what the
 * walk gathered is all that was read.  Remove it, then read the next
 * window.  Should c not come (it always does), it is reported as not
 * opened once no window is left to read it.
 */
static void batch_read(de_ctx *ctx, struct de__node *c)
{
	struct de__global *g = ctx->run.walk.gwin;

	batch_flush(ctx);
	while (c->state < NS_SCANNED && g->nstack && !de__cancelled(ctx))
		(void)de__global_read(ctx, g);
	if (c->state < NS_SCANNED) {
		c->fl.skip_scan = 1;
		c->res = DE_R_FAILED;
		c->op = DE_OP_OPEN;
		c->err = de__cancelled(ctx) ? ECANCELED : EIO;
		de__lock(ctx);
		de__set_state(c, NS_SCANNED);
		de__unlock(ctx);
	}
}

/* Make sure c is scanned, running it here if no worker has started it. */
static void need_scanned(de_ctx *ctx, struct de__node *c)
{
	if (ctx->run.walk.batch) {
		if (c->state < NS_SCANNED)
			batch_read(ctx, c);
		return;
	}
	pthread_mutex_lock(&ctx->mu);
	while (c->state < NS_SCANNED) {
		if (c->fl.deferred) {
			de__undefer(ctx, c, 1);
			pthread_mutex_unlock(&ctx->mu);
			de__task(&c->work, ctx->caller_buf);
			pthread_mutex_lock(&ctx->mu);
			continue;
		}
		if (c->state == NS_QUEUED) {
			int rc;

			pthread_mutex_unlock(&ctx->mu);
			rc = de__pool_cancel(&ctx->pool, &c->work);
			if (rc == 0)
				de__task(&c->work, ctx->caller_buf);
			pthread_mutex_lock(&ctx->mu);
			if (rc == 0)
				continue;
		}
		if (c->state < NS_SCANNED)
			de__sleep_locked(ctx);
	}
	pthread_mutex_unlock(&ctx->mu);
}

static void limit_take(de_ctx *ctx)
{
	if (ctx->run.limit.left > 0)
		ctx->run.limit.left--;
}

/* Ask the dispose hook about entry e of n, whose fd (pinned) is fd.  A
 * keep's errno (0 if the hook set none) goes into e->err for its report. */
static enum de_action call_dispose(de_ctx *ctx, struct de__node *n,
				   struct de__ent *e, int fd)
{
	long dlen = de__node_path(ctx, n, e->len + 1);
	size_t pos = dlen > 0 ? (size_t)dlen + 1 : 0;
	enum de_action a;

	if (dlen < 0) {
		e->err = ENOMEM;	/* no memory for its name: keep it */
		return DE_A_KEEP;
	}
	if (pos)
		ctx->pbuf[dlen] = '/';
	memcpy(ctx->pbuf + pos, de__ent_name(n, e), e->len);
	ctx->pbuf[pos + e->len] = 0;
	errno = 0;
	a = ctx->run.hooks->dispose(ctx->run.hooks->arg, fd,
				    de__ent_name(n, e), ctx->pbuf,
				    (enum de_type)e->type);
	e->err = a == DE_A_KEEP ? errno : 0;
	return a == DE_A_DONE || a == DE_A_KEEP ? a : DE_A_DELETE;
}

/*
 * Remove (or not) the non-directory e of n through n's fd (pinned), its
 * turn come: the dispose hook decides first, if set.  Returns whether n
 * keeps something.  The serial walk's, and the batch's, in inode order
 * (global.c de__batch_unlink).
 */
static int remove_file(de_ctx *ctx, struct de__node *n, int fd,
		       struct de__ent *e)
{
	int dry = ctx->run.flags & DE_F_DRY_RUN;
	enum de_action a = DE_A_DELETE;

	if (ctx->run.hooks->dispose) {
		/* The hook's rename (rsync: into a backup) takes the place of
		 * the unlink, so it waits for the unlink's slot of
		 * de_config.rate; a dry run, which unlinks nothing, is not
		 * paced. */
		if (!dry)
			de__pace(ctx);
		a = call_dispose(ctx, n, e, fd);
	}
	e->done = 1;
	if (a != DE_A_DELETE) {
		e->res = a == DE_A_DONE ? DE_R_DONE : DE_R_KEPT;
		return a == DE_A_KEEP;
	}
	if (dry) {
		e->res = DE_R_REMOVED;
		return 0;
	}
	return de__unlink_ent(ctx, n, fd, e, !ctx->run.hooks->dispose);
}

/* Serial mode: remove (or not) one non-directory entry of n.  nfd is n's
 * fd if the walk holds it pinned (walk_pins), else -1: then the entry
 * pins n itself. */
static void serial_file(de_ctx *ctx, struct de__node *n, struct de__ent *e,
			int nfd)
{
	int fd, kept;

	if (e->done) {
		if (e->res == DE_R_DONE)
			limit_take(ctx);
		return;
	}
	e->done = 1;
	if (ctx->run.limit.left == 0) {
		e->res = DE_R_SKIPPED;
		ctx->run.limit.hit = 1;
		return;
	}
	if (ctx->run.flags & DE_F_DRY_RUN && !ctx->run.hooks->dispose) {
		e->res = DE_R_REMOVED;
		limit_take(ctx);
		return;
	}
	fd = nfd >= 0 ? nfd : de__node_pin(ctx, n, -1);
	if (fd < 0) {
		/* The directory cannot be reached (ENOENT: it vanished). */
		e->res = (uint8_t)de__rm_result(fd, &e->err);
		if (e->res == DE_R_VANISHED)
			return;
		e->op = DE_OP_OPEN;
		kept = 1;
		goto out;
	}
	kept = remove_file(ctx, n, fd, e);
	if (nfd < 0)
		de__node_unpin(ctx, n);
	if (e->res == DE_R_REMOVED || e->res == DE_R_DONE)
		limit_take(ctx);
out:
	if (kept) {
		pthread_mutex_lock(&ctx->mu);
		n->cnt.kept = 1;
		pthread_mutex_unlock(&ctx->mu);
	}
}

/* Serial mode: finish directory c (all its entries are done). */
static void serial_dir(de_ctx *ctx, struct de__node *c)
{
	struct de__node *p = c->parent;
	int res, op = 0, err = 0;

	if (ctx->run.limit.left == 0 && (!c->fl.skip_scan || c->res == DE_R_FAILED)) {
		res = DE_R_SKIPPED;
		ctx->run.limit.hit = 1;
	} else if (c->fl.skip_scan) {
		struct de__pin pp;

		/* An unopened one may be empty (unlink.c). */
		res = de__rmdir_unread(ctx, c, &pp, &op, &err);
		if (pp.n)
			de__pin_drop(ctx, &pp);
		if (res == DE_R_REMOVED)
			limit_take(ctx);
	} else if (c->cnt.kept) {
		res = DE_R_NOT_EMPTY;
	} else if (ctx->run.flags & DE_F_DRY_RUN) {
		res = DE_R_REMOVED;
		limit_take(ctx);
	} else {
		struct de__pin cp = DE__NO_PIN, pp;

		/* c's fd, if still held, reopens the parent as "..". */
		pthread_mutex_lock(&ctx->mu);
		if (c->fd >= 0) {
			c->cnt.pins++;
			cp = (struct de__pin){ c, c->fd };
		}
		pthread_mutex_unlock(&ctx->mu);
		res = de__rmdir_node(ctx, c, &cp, &pp, &op, &err);
		/* c first, so that p, which the walk uses next, is the
		 * most recently used fd: over budget, the fd cache
		 * closes the least recently used idle one (node.c). */
		if (cp.n)
			de__pin_drop(ctx, &cp);
		if (pp.n)
			de__pin_drop(ctx, &pp);
		if (res == DE_R_REMOVED)
			limit_take(ctx);
	}
	c->res = (uint8_t)res;
	c->op = (uint8_t)op;
	c->err = err;
	if (res != DE_R_REMOVED && res != DE_R_VANISHED) {
		pthread_mutex_lock(&ctx->mu);
		p->cnt.kept = 1;
		pthread_mutex_unlock(&ctx->mu);
	}
}

/*
 * Serial mode with the ask_dir hook: may the walk enter directory c of
 * n (rmdir 0), or remove it (rmdir 1)?  nfd is n's fd if the walk holds
 * it pinned, else -1.  Returns 1 to go on; 0 when the hook said keep, c
 * then left as not entered, DE_R_KEPT.  When n cannot be reached the
 * hook is not asked: the removal meets the error and reports it.
 */
static int ask_dir(de_ctx *ctx, struct de__node *n, int nfd,
		   struct de__node *c, int rmdir)
{
	int fd = nfd >= 0 ? nfd : de__node_pin(ctx, n, -1);
	enum de_action a = DE_A_KEEP;

	if (fd < 0)
		return 1;
	if (de__node_path(ctx, c, 0) >= 0)
		a = ctx->run.hooks->ask_dir(ctx->run.hooks->arg, fd, c->name,
					    ctx->pbuf, rmdir);
	if (nfd < 0)
		de__node_unpin(ctx, n);
	if (a != DE_A_KEEP)
		return 1;
	c->fl.skip_scan = 1;
	c->res = DE_R_KEPT;
	c->op = 0;
	c->err = 0;
	return 0;
}

/*
 * Whether a serial run's walk pins the directory whose entries it
 * removes: not where no fd is needed (a dry run without the dispose
 * hook), and not when the fd budget is a few fds (the caller holds
 * nearly all of its limit, test/fd_pressure.c): a pin cannot be shed
 * under EMFILE (node.c de__shed_fd), and the readers need every fd
 * there.  Each entry then pins its directory itself, which the fd cache
 * keeps held (the most recently used; node.c), or reopens as ".." of
 * the child the walk just left (test/deep_lowfd.c).
 */

static int walk_pins(const de_ctx *ctx)
{
	return de__serial(ctx) && ctx->fd_budget >= DE__WALK_PIN_BUDGET &&
	       (!(ctx->run.flags & DE_F_DRY_RUN) || ctx->run.hooks->dispose);
}

/*
 * Serial run: the walk goes down from n, pinned (nfd >= 0) or not, into
 * its child c.  c is pinned while n still is, so a closed fd of c's is
 * reopened from n's with one openat; then n is let go, so that the walk
 * holds one fd, not one per level.  Returns c's pinned fd or -1.
 */
static int walk_down(de_ctx *ctx, struct de__node *n, int nfd,
		     struct de__node *c)
{
	int cfd = walk_pins(ctx) ? de__node_pin(ctx, c, -1) : -1;

	if (nfd >= 0)
		de__node_unpin(ctx, n);
	return cfd < 0 ? -1 : cfd;
}

/*
 * And back up from c (its pinned fd cfd, or -1) to n: n is pinned again,
 * reopened as c's ".." if its fd was closed meanwhile, and c let go.
 * Pinning n from its nearest held ancestor instead, once per entry, made
 * a serial run quadratic in the depth of a chain deeper than the fd
 * budget (every btrfs run, --max-delete, --backup).  Returns n's pinned
 * fd or -1.
 */
static int walk_up(de_ctx *ctx, struct de__node *n, struct de__node *c,
		   int cfd)
{
	int nfd = walk_pins(ctx) ? de__node_pin(ctx, n, cfd) : -1;

	if (cfd >= 0)
		de__node_unpin(ctx, c);
	return nfd < 0 ? -1 : nfd;
}

/*
 * The batch walk: remove (or not) entry i of n, its turn come in
 * canonical order, and report it, as the serial walk does (serial_file(),
 * serial_dir()); the batch unlinked most files already, which
 * serial_file() then only counts.  A subdirectory's entry stands for its
 * rmdir, its own entries done.
 */
static void finish_ent(de_ctx *ctx, struct de__node *n, size_t i)
{
	struct de__ent *e = &n->ls.ents[i];
	struct de__node *c = e->child;

	if (c) {
		serial_dir(ctx, c);
		de__report_self(ctx, c);
		e->child = NULL;
		de__emit_free(ctx, c);
	} else {
		serial_file(ctx, n, e, -1);
		de__report_ent(ctx, n, de__node_path(ctx, n, e->len + 1), e);
	}
	de__maybe_progress(ctx, 0);
}

/* The batch walk: remove what the batch holds (de__batch_unlink), then
 * report it, in canonical order. */
static void batch_flush(de_ctx *ctx)
{
	struct de__batch *b = ctx->run.walk.batch;
	size_t k;

	if (!b->nv)
		return;
	de__batch_unlink(ctx, b, remove_file);
	for (k = 0; k < b->nv && !de__cancelled(ctx); k++)
		finish_ent(ctx, b->v[k].n, b->v[k].i);
	de__batch_done(b);
}

/* The batch walk passes entry i of n: into the batch, which is removed
 * when full.  Without memory for it, after what is held, at once. */
static void batch_push(de_ctx *ctx, struct de__node *n, size_t i)
{
	struct de__batch *b = ctx->run.walk.batch;

	if (de__batch_add(b, n, i) < 0) {
		batch_flush(ctx);
		if (de__batch_add(b, n, i) < 0) {
			/* Nothing held, not even the last one's pin,
			 * which finish_ent() may free. */
			de__batch_free(ctx, b);
			de__batch_init(b, ctx->run.walk.gwin);
			finish_ent(ctx, n, i);
			return;
		}
	}
	if (de__batch_full(b))
		batch_flush(ctx);
}

/* The walk comes to n: enter it, and start its removal where workers
 * make it. */
static void walk_enter(de_ctx *ctx, struct de__node *n)
{
	if (n == ctx->run.root)
		return;
	/* The batch walk's reader entered n as it read it (global.c
	 * read_window); so did the first window of a run it handed over. */
	if (ctx->run.plan.dir_hooks && !n->fl.hooked && !de__cancelled(ctx))
		de__enter_dir(ctx, n);
	if (de__serial(ctx))
		de__prepare_serial(ctx, n);
	else if (ctx->run.plan.dir_hooks && !ctx->run.walk.batch)
		de__unlink_phase(ctx, n, DE__NO_PIN, DE__P2_POOL_GATED);
}

/* The batch walk's turn of entry i of n: its subtree walked, then the
 * entry itself into the batch. */
static void batch_entry(de_ctx *ctx, struct de__node *n, size_t i)
{
	struct de__node *c = n->ls.ents[i].child;

	if (c) {
		need_scanned(ctx, c);
		if (!c->fl.skip_scan)
			(void)de__ordered_walk(ctx, c, -1);
	}
	/* A set's directory (de_remove_sets) stays. */
	if (!de__cancelled(ctx) && !(c && c->fl.base))
		batch_push(ctx, n, i);
}

/*
 * The turn of n's subdirectory c (entry e) in the ordered and serial
 * walks: rm -i's questions, c's subtree, its removal (serial) or its
 * end (ordered), its report.  nfd as for de__ordered_walk(); returns
 * what the walk holds of n's fd after.
 */
static int walk_child(de_ctx *ctx, struct de__node *n, int nfd,
		      struct de__ent *e)
{
	struct de__node *c = e->child;

	need_scanned(ctx, c);
	/* rm -i asks before it descends into a directory with entries, or
	 * one it cannot tell is empty. */
	if (ctx->run.hooks->ask_dir &&
	    (c->fl.skip_scan ? de__unopened_for_perm(c) : c->ls.nents > 0))
		(void)ask_dir(ctx, n, nfd, c, 0);
	if (!c->fl.skip_scan) {
		int cfd = walk_down(ctx, n, nfd, c);

		cfd = de__ordered_walk(ctx, c, cfd);
		nfd = walk_up(ctx, n, c, cfd);
	}
	if (de__cancelled(ctx))
		return nfd;
	if (ctx->run.hooks->ask_dir &&
	    (!c->fl.skip_scan || de__unopened_for_perm(c)) &&
	    !c->cnt.kept && ctx->run.limit.left != 0)
		(void)ask_dir(ctx, n, nfd, c, 1);
	if (de__serial(ctx))
		serial_dir(ctx, c);
	else
		de__wait_state(ctx, c, NS_FINAL);
	de__report_self(ctx, c);
	e->child = NULL;
	de__emit_free(ctx, c);
	de__pump(ctx);
	return nfd;
}

/*
 * The ordered walk of n's listing, in canonical order (recursive: one
 * small frame per level of the tree).  nfd is n's fd if the caller
 * pinned it for the walk (walk_pins), else -1.  Returns n's fd, still
 * pinned, or -1: the pin the walk holds moves with it (walk_down,
 * walk_up), and the caller drops what is left.
 */
int de__ordered_walk(de_ctx *ctx, struct de__node *n, int nfd)
{
	size_t i;

	walk_enter(ctx, n);
	if (!de__serial(ctx) && !ctx->run.walk.batch)
		de__wait_state(ctx, n, NS_P2);
	for (i = 0; i < n->ls.nents && !de__cancelled(ctx); i++) {
		struct de__ent *e = &n->ls.ents[i];

		if (ctx->run.walk.batch) {
			batch_entry(ctx, n, i);
			continue;
		}
		if (e->child) {
			nfd = walk_child(ctx, n, nfd, e);
			if (de__cancelled(ctx))
				break;
		} else {
			if (de__serial(ctx))
				serial_file(ctx, n, e, nfd);
			else
				de__wait_state(ctx, n, NS_FILES);
			de__report_ent(ctx, n, de__node_path(ctx, n, e->len + 1),
				       e);
		}
		de__maybe_progress(ctx, 0);
	}
	de__leave_dir(ctx, n);
	if (ctx->run.walk.batch && n == ctx->run.root)
		batch_flush(ctx);
	return nfd;
}

/*
 * The global schedule (global.c), window by window on this thread; the
 * reports of each window go out before the next is read, so that only
 * one window's listings are held.
 */
void de__run_global(de_ctx *ctx, struct de__node *r)
{
	struct de__global g;
	int more;

	de__global_start(ctx, &g, r, ctx->run.plan.probe);
	do {
		more = de__global_step(ctx, &g);
		pthread_mutex_lock(&ctx->mu);
		de__emit_queued(ctx);
		pthread_mutex_unlock(&ctx->mu);
	} while (more);
}

/*
 * An ordered run in the global schedule: read the first window.  When
 * the probe finds the reads fast, the tree has been handed over to the
 * pool (global.c hand_over) and the run goes on as an ordered or serial
 * one (returns 0); else the batch walk takes it (1).
 */
int de__batch_start(de_ctx *ctx, struct de__node *r, struct de__global *g,
		    struct de__batch *b, int probe)
{
	de__global_start(ctx, g, r, probe);
	ctx->run.walk.gwin = g;
	if (de__global_read(ctx, g) < 0) {
		ctx->run.walk.gwin = NULL;
		/* A limit or hooks: the serial walk (policy.c
		 * de__plan_hand_over). */
		if (de__serial(ctx))
			de__prepare_serial(ctx, r);
		return 0;
	}
	de__batch_init(b, g);
	ctx->run.walk.batch = b;
	return 1;
}

/* The batch walk is over: the root is final, as the last release makes
 * it in the other schedules. */
void de__batch_end(de_ctx *ctx, struct de__node *r)
{
	de__batch_free(ctx, ctx->run.walk.batch);
	de__global_end(ctx->run.walk.gwin);
	ctx->run.walk.batch = NULL;
	ctx->run.walk.gwin = NULL;
	de__lock(ctx);
	de__set_state(r, NS_FINAL);
	de__unlock(ctx);
}

/*
 * run.c - de_remove(): the calling thread's side.
 *
 * The calling thread sets up the root (the caller's dirfd and its
 * targets), then sleeps on ctx->cv and delivers reports, progress and
 * enter/leave calls; workers only touch the file system and the tree.
 *
 * Modes (chosen per run):
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

#define WIN_MAX 256u

/*
 * Free node c (the emitter's; no one else frees nodes).  pbuf keeps its
 * prefix valid: if it held c's path, it now holds c's parent's, which is
 * still alive (a parent is freed only after its children).
 */
static void free_node(de_ctx *ctx, struct de__node *c)
{
	const struct de__node *m = ctx->run.pbuf_node;

	/* Usually m is c itself (its report was the last path built). */
	while (m && m->depth > c->depth)
		m = m->parent;
	if (m == c)
		ctx->run.pbuf_node = c->parent;
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

static void maybe_progress(de_ctx *ctx, int force)
{
	uint64_t now = de__now_ms();
	struct de_progress p;

	if (!force && now - ctx->run.last_prog_ms < ctx->cfg.progress_ms)
		return;
	ctx->run.last_prog_ms = now;
	if (!ctx->run.hooks->progress || de__cancelled(ctx))
		return;
	p.removed = __atomic_load_n(&ctx->run.unlinked, __ATOMIC_RELAXED);
	if (p.removed < ctx->run.sum.removed_total)
		p.removed = ctx->run.sum.removed_total;
	p.failed = ctx->run.sum.failed;
	pthread_mutex_lock(&ctx->mu);
	p.dirs_pending = ctx->run.prog.dirs_pending;
	pthread_mutex_unlock(&ctx->mu);
	p.elapsed_ms = now - ctx->run.t0_ms;
	p.pace = de__pace_rate(ctx);
	if (ctx->run.hooks->progress(ctx->run.hooks->arg, &p)) {
		pthread_mutex_lock(&ctx->mu);
		__atomic_store_n(&ctx->run.cancel, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&ctx->mu);
	}
}

/* ctx->run.tick: progress from the calling thread while it removes (sched.c
 * de__remove_at).  No lock is held here. */
static void caller_tick(de_ctx *ctx)
{
	maybe_progress(ctx, 0);
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

static void report_ent(de_ctx *ctx, struct de__node *n, long dlen,
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

static void report_self(de_ctx *ctx, struct de__node *c)
{
	if (!wanted(ctx, c->res) || de__node_path(ctx, c, 0) < 0) {
		count(ctx, c->res, DE_T_DIR);	/* as in report_ent() */
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
static void sleep_locked(de_ctx *ctx)
{
	struct timespec ts;
	uint64_t due = ctx->run.last_prog_ms + ctx->cfg.progress_ms;
	uint64_t now = de__now_ms();
	struct de__work *w;

	if (ctx->pool.nthreads == 0 && (w = de__pool_take(&ctx->pool))) {
		pthread_mutex_unlock(&ctx->mu);
		w->fn(w, ctx->caller_buf);
		maybe_progress(ctx, 0);
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
	maybe_progress(ctx, 0);
	pthread_mutex_lock(&ctx->mu);
}

/* Wait until n reaches state. */
static void wait_state(de_ctx *ctx, struct de__node *n, int state)
{
	pthread_mutex_lock(&ctx->mu);
	while (n->state < state)
		sleep_locked(ctx);
	pthread_mutex_unlock(&ctx->mu);
}

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
	struct de__global *g = ctx->run.gwin;

	batch_flush(ctx);
	while (c->state < NS_SCANNED && g->nstack && !de__cancelled(ctx))
		(void)de__global_read(ctx, g);
	if (c->state < NS_SCANNED) {
		c->skip_scan = 1;
		c->res = DE_R_FAILED;
		c->op = DE_OP_OPEN;
		c->err = de__cancelled(ctx) ? ECANCELED : EIO;
		de__lock(ctx);
		c->state = NS_SCANNED;
		de__unlock(ctx);
	}
}

/* Make sure c is scanned, running it here if no worker has started it. */
static void need_scanned(de_ctx *ctx, struct de__node *c)
{
	if (ctx->run.batch) {
		if (c->state < NS_SCANNED)
			batch_read(ctx, c);
		return;
	}
	pthread_mutex_lock(&ctx->mu);
	while (c->state < NS_SCANNED) {
		if (c->deferred) {
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
			sleep_locked(ctx);
	}
	pthread_mutex_unlock(&ctx->mu);
}

static void limit_take(de_ctx *ctx)
{
	if (ctx->run.limit_left > 0)
		ctx->run.limit_left--;
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
	if (ctx->run.limit_left == 0) {
		e->res = DE_R_SKIPPED;
		ctx->run.limit_hit = 1;
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
		n->kept = 1;
		pthread_mutex_unlock(&ctx->mu);
	}
}

/* Serial mode: finish directory c (all its entries are done). */
static void serial_dir(de_ctx *ctx, struct de__node *c)
{
	struct de__node *p = c->parent;
	int res, op = 0, err = 0;

	if (ctx->run.limit_left == 0 && (!c->skip_scan || c->res == DE_R_FAILED)) {
		res = DE_R_SKIPPED;
		ctx->run.limit_hit = 1;
	} else if (c->skip_scan) {
		int ppinned;

		/* An unopened one may be empty (sched.c). */
		res = de__rmdir_unread(ctx, c, &ppinned, &op, &err);
		if (ppinned)
			de__node_unpin(ctx, p);
		if (res == DE_R_REMOVED)
			limit_take(ctx);
	} else if (c->kept) {
		res = DE_R_NOT_EMPTY;
	} else if (ctx->run.flags & DE_F_DRY_RUN) {
		res = DE_R_REMOVED;
		limit_take(ctx);
	} else {
		int cfd = -1, ppinned;

		/* c's fd, if still held, reopens the parent as "..". */
		pthread_mutex_lock(&ctx->mu);
		if (c->fd >= 0) {
			c->pins++;
			cfd = c->fd;
		}
		pthread_mutex_unlock(&ctx->mu);
		res = de__rmdir_node(ctx, c, cfd, &ppinned, &op, &err);
		/* c first, so that p, which the walk uses next, is the
		 * most recently used fd: over budget, the fd cache
		 * closes the least recently used idle one (node.c). */
		if (cfd >= 0)
			de__node_unpin(ctx, c);
		if (ppinned)
			de__node_unpin(ctx, p);
		if (res == DE_R_REMOVED)
			limit_take(ctx);
	}
	c->res = (uint8_t)res;
	c->op = (uint8_t)op;
	c->err = err;
	if (res != DE_R_REMOVED && res != DE_R_VANISHED) {
		pthread_mutex_lock(&ctx->mu);
		p->kept = 1;
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
	c->skip_scan = 1;
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
#define WALK_PIN_BUDGET 4

static int walk_pins(const de_ctx *ctx)
{
	return ctx->run.serial && ctx->fd_budget >= WALK_PIN_BUDGET &&
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
	struct de__ent *e = &n->ents[i];
	struct de__node *c = e->child;

	if (c) {
		serial_dir(ctx, c);
		report_self(ctx, c);
		e->child = NULL;
		free_node(ctx, c);
	} else {
		serial_file(ctx, n, e, -1);
		report_ent(ctx, n, de__node_path(ctx, n, e->len + 1), e);
	}
	maybe_progress(ctx, 0);
}

/* The batch walk: remove what the batch holds (de__batch_unlink), then
 * report it, in canonical order. */
static void batch_flush(de_ctx *ctx)
{
	struct de__batch *b = ctx->run.batch;
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
	struct de__batch *b = ctx->run.batch;

	if (de__batch_add(b, n, i) < 0) {
		batch_flush(ctx);
		if (de__batch_add(b, n, i) < 0) {
			/* Nothing held, not even the last one's pin,
			 * which finish_ent() may free. */
			de__batch_free(ctx, b);
			de__batch_init(b, ctx->run.gwin);
			finish_ent(ctx, n, i);
			return;
		}
	}
	if (de__batch_full(b))
		batch_flush(ctx);
}

/*
 * The ordered walk of n's listing, in canonical order (recursive: one
 * small frame per level of the tree).  nfd is n's fd if the caller
 * pinned it for the walk (walk_pins), else -1.  Returns n's fd, still
 * pinned, or -1: the pin the walk holds moves with it (walk_down,
 * walk_up), and the caller drops what is left.
 */
static int ordered_walk(de_ctx *ctx, struct de__node *n, int nfd)
{
	long dlen;
	size_t i;

	if (n != ctx->run.root) {
		/* The batch walk's reader entered n as it read it (global.c
		 * read_window); so did the first window of a run it handed
		 * over. */
		if (ctx->run.hookmode && !n->hooked && !de__cancelled(ctx))
			de__enter_dir(ctx, n);
		if (ctx->run.serial) {
			de__prepare_serial(ctx, n);
		} else if (ctx->run.hookmode && !ctx->run.batch) {
			pthread_mutex_lock(&ctx->mu);
			n->p2sub = 1;
			n->work.fn = de__p2task;
			pthread_mutex_unlock(&ctx->mu);
			de__pool_submit(&ctx->pool, &n->work, 1);
		}
	}
	if (!ctx->run.serial && !ctx->run.batch)
		wait_state(ctx, n, NS_P2);
	for (i = 0; i < n->nents && !de__cancelled(ctx); i++) {
		struct de__ent *e = &n->ents[i];
		struct de__node *c = e->child;

		if (ctx->run.batch) {
			if (c) {
				need_scanned(ctx, c);
				if (!c->skip_scan)
					(void)ordered_walk(ctx, c, -1);
			}
			/* A set's directory (de_remove_sets) stays. */
			if (!de__cancelled(ctx) && !(c && c->base))
				batch_push(ctx, n, i);
			continue;
		}
		if (c) {
			need_scanned(ctx, c);
			/* rm -i asks before it descends into a directory with
			 * entries, or one it cannot tell is empty. */
			if (ctx->run.hooks->ask_dir &&
			    (c->skip_scan ? de__unopened_for_perm(c) : c->nents > 0))
				(void)ask_dir(ctx, n, nfd, c, 0);
			if (!c->skip_scan) {
				int cfd = walk_down(ctx, n, nfd, c);

				cfd = ordered_walk(ctx, c, cfd);
				nfd = walk_up(ctx, n, c, cfd);
			}
			if (de__cancelled(ctx))
				break;
			if (ctx->run.hooks->ask_dir &&
			    (!c->skip_scan || de__unopened_for_perm(c)) &&
			    !c->kept && ctx->run.limit_left != 0)
				(void)ask_dir(ctx, n, nfd, c, 1);
			if (ctx->run.serial)
				serial_dir(ctx, c);
			else
				wait_state(ctx, c, NS_FINAL);
			report_self(ctx, c);
			e->child = NULL;
			free_node(ctx, c);
			de__pump(ctx);
		} else {
			if (ctx->run.serial)
				serial_file(ctx, n, e, nfd);
			else
				wait_state(ctx, n, NS_FILES);
			dlen = de__node_path(ctx, n, e->len + 1);
			report_ent(ctx, n, dlen, e);
		}
		maybe_progress(ctx, 0);
	}
	de__leave_dir(ctx, n);
	if (ctx->run.batch && n == ctx->run.root)
		batch_flush(ctx);
	return nfd;
}

/* Unordered: deliver events until the root is final and none is left. */
/* Deliver the queued events.  Tree lock held (dropped while reporting). */
static void emit_queued(de_ctx *ctx)
{
	struct de__ev *ev;
	struct de__node *c;

	while ((ev = ctx->run.ev_head)) {
		int mask = ev->kind;

		c = ev->node;
		ctx->run.ev_head = ev->next;
		if (!ctx->run.ev_head)
			ctx->run.ev_tail = NULL;
		ctx->run.ev_count--;
		if (mask & DE__EV_FILES)
			ctx->run.ev_ents -= c->nents;
		pthread_mutex_unlock(&ctx->mu);
		if (mask & DE__EV_FILES) {
			long dlen = de__node_path(ctx, c, 256);
			size_t i;

			for (i = 0; i < c->nents; i++)
				if (!c->ents[i].child &&
				    c->ents[i].done)
					report_ent(ctx, c, dlen,
						   &c->ents[i]);
			/*
			 * No worker reads the listing after
			 * NS_FILES: free it now, so only
			 * directories being worked on hold one.
			 */
			free(c->ents);
			free(c->arena);
			c->ents = NULL;
			c->arena = NULL;
			c->nents = 0;
		}
		if (mask & DE__EV_SELF) {
			report_self(ctx, c);
			free_node(ctx, c);
		}
		maybe_progress(ctx, 0);
		pthread_mutex_lock(&ctx->mu);
	}
}

static void drain_events(de_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mu);
	for (;;) {
		emit_queued(ctx);
		if (ctx->run.root->state == NS_FINAL)
			break;
		sleep_locked(ctx);
	}
	pthread_mutex_unlock(&ctx->mu);
}

/*
 * The global schedule (global.c), window by window on this thread; the
 * reports of each window go out before the next is read, so that only
 * one window's listings are held.
 */
static void run_global(de_ctx *ctx, struct de__node *r)
{
	struct de__global g;
	int more;

	de__global_start(ctx, &g, r, ctx->cfg.schedule == DE_SCHED_AUTO);
	do {
		more = de__global_step(ctx, &g);
		pthread_mutex_lock(&ctx->mu);
		emit_queued(ctx);
		pthread_mutex_unlock(&ctx->mu);
	} while (more);
}

/*
 * An ordered run in the global schedule: read the first window.  When
 * the probe finds the reads fast, the tree has been handed over to the
 * pool (global.c hand_over) and the run goes on as an ordered or serial
 * one (returns 0); else the batch walk takes it (1).
 */
static int batch_start(de_ctx *ctx, struct de__node *r,
		       struct de__global *g, struct de__batch *b, int probe)
{
	de__global_start(ctx, g, r, probe);
	ctx->run.gwin = g;
	if (de__global_read(ctx, g) < 0) {
		ctx->run.gwin = NULL;
		ctx->run.global = 0;
		/* A limit or hooks: the serial walk, as planned without
		 * the global schedule (policy.c de__plan). */
		if (de__serial_after_global(ctx)) {
			ctx->run.serial = 1;
			de__prepare_serial(ctx, r);
		}
		return 0;
	}
	de__batch_init(b, g);
	ctx->run.batch = b;
	return 1;
}

/* The batch walk is over: the root is final, as the last release makes
 * it in the other schedules. */
static void batch_end(de_ctx *ctx, struct de__node *r)
{
	de__batch_free(ctx, ctx->run.batch);
	de__global_end(ctx->run.gwin);
	ctx->run.batch = NULL;
	ctx->run.gwin = NULL;
	de__lock(ctx);
	r->state = NS_FINAL;
	de__unlock(ctx);
}

/* After a cancel: let everything started finish, start nothing new. */
static void drain_cancel(de_ctx *ctx)
{
	struct de__node *c;

	for (;;) {
		int again = 0;

		pthread_mutex_lock(&ctx->mu);
		while ((c = ctx->run.deferred)) {
			de__undefer(ctx, c, 0);
			pthread_mutex_unlock(&ctx->mu);
			de__task(&c->work, ctx->caller_buf);
			pthread_mutex_lock(&ctx->mu);
		}
		if (ctx->run.hookmode && !ctx->run.serial) {
			for (c = ctx->run.live; c; c = c->lnext) {
				if (c->state == NS_SCANNED && !c->p2sub &&
				    c != ctx->run.root) {
					c->p2sub = 1;
					pthread_mutex_unlock(&ctx->mu);
					de__phase2(ctx, c, 0);
					again = 1;
					pthread_mutex_lock(&ctx->mu);
					break;
				}
			}
		}
		if (!again) {
			if (ctx->run.serial ? ctx->run.scans_inflight == 0 :
			    ctx->run.root->state == NS_FINAL) {
				pthread_mutex_unlock(&ctx->mu);
				return;
			}
			sleep_locked(ctx);
		}
		pthread_mutex_unlock(&ctx->mu);
	}
}

static int bad_name(const char *s)
{
	return !*s || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, "..");
}

/*
 * Fill r's listing from the targets.  want_ino: the global schedule
 * sorts the targets' files by inode with the rest of its window, so a
 * typed target the caller gave no inode (rsync's --delete-delay queue)
 * is lstat()ed for it; one that fails is left to its removal, which
 * tells what became of it.
 */
static int add_targets(de_ctx *ctx, struct de__node *r, int dirfd,
		       const struct de_target *t, size_t n, int want_ino)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct de__ent *e;
		size_t len = strlen(t[i].name ? t[i].name : "");
		struct de__st st;
		int rc;

		if (len > 65535)
			len = 65535;
		rc = de__add_ent(r, t[i].name ? t[i].name : "", len, 0,
				 t[i].type);
		if (rc)
			return rc;
		e = &r->ents[r->nents - 1];
		e->ino = t[i].ino;
		if (!t[i].name || bad_name(t[i].name)) {
			e->res = DE_R_FAILED;
			e->op = DE_OP_OPEN;
			e->err = EINVAL;
			e->done = 1;
			continue;
		}
		if (e->type != DE_T_UNKNOWN) {
			if (want_ino && !e->ino && e->type != DE_T_DIR &&
			    de__lstatat(ctx, dirfd, t[i].name, &st) == 0)
				e->ino = st.ino;
			continue;
		}
		rc = de__lstatat(ctx, dirfd, t[i].name, &st);
		if (rc == -ENOENT) {
			e->res = DE_R_VANISHED;
			e->op = DE_OP_STAT;
			e->done = 1;
		} else if (rc) {
			e->res = DE_R_FAILED;
			e->op = DE_OP_STAT;
			e->err = -rc;
			e->done = 1;
		} else {
			e->type = (uint8_t)de_type_of_mode(st.mode);
			e->mode = st.mode;
			e->ino = st.ino;
		}
	}
	return 0;
}

static void reset_run(de_ctx *ctx, const struct de_hooks *hooks,
		      const struct de_opts *opts)
{
	unsigned flags = ctx->cfg.flags;
	long long max_delete = ctx->cfg.max_delete;

	if (opts) {
		flags |= opts->flags &
			 (DE_F_ORDERED | DE_F_DRY_RUN | DE_F_HOOKS_AHEAD);
		if (opts->max_delete >= 0)
			max_delete = opts->max_delete;
	}
	ctx->run.flags = flags;

	memset(&ctx->run.nohooks, 0, sizeof(ctx->run.nohooks));
	ctx->run.hooks = hooks ? hooks : &ctx->run.nohooks;
	ctx->run.hookmode = ctx->run.hooks->enter_dir != NULL;
	ctx->run.serial = (flags & DE_F_DRY_RUN) || max_delete >= 0 ||
		      ctx->run.hooks->dispose != NULL ||
		      ctx->run.hooks->ask_dir != NULL;
	ctx->run.ordered = (flags & DE_F_ORDERED) || ctx->run.serial ||
			   ctx->run.hookmode;
	ctx->run.limit_left = max_delete >= 0 ? max_delete : -1;
	ctx->run.limit_hit = 0;
	__atomic_store_n(&ctx->run.cancel, 0, __ATOMIC_RELAXED);
	ctx->run.nfds = 0;
	/*
	 * Nodes a scanning thread may hold scanned ahead of the unlinker
	 * on a chain (sched.c run_phase2): each keeps a pinned fd, so a
	 * quarter of the fd budget (de__ctx_start()), at most 32 (one
	 * wake-up of the reader per 32 directories, not one per directory).
	 */
	ctx->run.ahead_max = (unsigned)ctx->fd_budget / 4;
	if (ctx->run.ahead_max > 32)
		ctx->run.ahead_max = 32;
	if (ctx->run.ahead_max < 1)
		ctx->run.ahead_max = 1;
	ctx->run.win_max = WIN_MAX;
	ctx->run.win_live = 0;
	ctx->run.scans_inflight = 0;
	ctx->run.live = NULL;
	ctx->run.deferred = NULL;
	ctx->run.ev_head = ctx->run.ev_tail = NULL;
	ctx->run.ev_count = 0;
	ctx->run.ev_ents = 0;
	/* ctx->sched is not reset: internal.h, struct de__sched, says why. */
	memset(&ctx->run.sum, 0, sizeof(ctx->run.sum));
	memset(&ctx->run.prog, 0, sizeof(ctx->run.prog));
	ctx->run.t0_ms = ctx->run.last_prog_ms = de__now_ms();
	__atomic_store_n(&ctx->run.unlinked, 0, __ATOMIC_RELAXED);
	ctx->run.caller = pthread_self();
	ctx->run.tick = caller_tick;
	ctx->run.pbuf_node = NULL;
	ctx->run.gwin = NULL;
	ctx->run.batch = NULL;
}

/* See delete_engine.h.  limit_left belongs to the calling thread: only
 * serial runs (and every run with max_delete is one) consult it, and
 * there only the calling thread removes. */
int de_limit_take(de_ctx *ctx, unsigned long long n)
{
	if (!ctx || !ctx->run.root || !de__is_caller(ctx))
		return -EINVAL;
	if (ctx->run.limit_left < 0)
		return 0;
	if ((unsigned long long)ctx->run.limit_left <= n)
		ctx->run.limit_left = 0;
	else
		ctx->run.limit_left -= (long long)n;
	return 0;
}

/* The root node: dirfd, the directory the targets are in, checked; or
 * with a parent (de_remove_sets' own root), a set's directory. */
static int new_root(de_ctx *ctx, struct de__node *parent, int dirfd,
		    struct de__node **out)
{
	struct de__st st;
	struct de__node *r;
	int rc = de__fstat(ctx, dirfd, ".", &st);

	if (rc)
		return rc;
	if (!S_ISDIR(st.mode))
		return -ENOTDIR;
	r = de__node_new(ctx, parent, "", 0, 0);
	if (!r)
		return -ENOMEM;
	r->base = parent != NULL;
	r->fd = dirfd;
	r->pins = 1;
	r->dev = st.dev;
	r->ino = st.ino;
	r->mode = st.mode;
	r->fstype = de__fs_type(dirfd);
	r->state = NS_SCANNED;
	*out = r;
	return 0;
}

/* How many workers this run may use, and the plan for its file system
 * (policy.c de__plan). */
static void plan_run(de_ctx *ctx, long fstype)
{
	unsigned t = de__plan(ctx, fstype);

	/* More workers than CPUs only where they wait on a server, and
	 * only where they unlink. */
	if (t > ctx->pool.nthreads && !ctx->cfg.threads && !ctx->run.serial)
		de__ctx_grow(ctx, t);
	if (t > ctx->pool.nthreads)
		t = ctx->pool.nthreads;
	/* A thread at work holds about two fds (a directory and the child
	 * it opens): under a tight RLIMIT_NOFILE, fewer threads rather than
	 * threads waiting for fds. */
	if (t > 1 && (unsigned)ctx->fd_budget < 2 * t)
		t = ctx->fd_budget > 2 ? (unsigned)ctx->fd_budget / 2 : 1;
	de__pool_limit(&ctx->pool, t);
	ctx->run.run_threads = t;
	de__plan_workers(ctx, fstype, t);
}

/* Wait for the run to end, free what is left, and say how it went. */
static int end_run(de_ctx *ctx, struct de__node *r, struct de_summary *sum)
{
	if (de__cancelled(ctx))
		drain_cancel(ctx);
	else if (!ctx->run.serial)
		wait_state(ctx, r, NS_FINAL);
	/* No worker is still leaving its last item when this returns: the
	 * caller may fork() (pool.c). */
	if (ctx->pool_ready)
		de__pool_quiesce(&ctx->pool);
	/* Free what is left: the root, and after a cancel everything. */
	while (ctx->run.live)
		de__node_free(ctx, ctx->run.live);
	ctx->run.pbuf_node = NULL;
	ctx->run.root = NULL;
	maybe_progress(ctx, 1);
	if (sum)
		*sum = ctx->run.sum;
	if (de__cancelled(ctx))
		return -ECANCELED;
	if (ctx->run.limit_hit || ctx->run.sum.skipped)
		return -EDQUOT;
	if (ctx->run.sum.failed)
		return -EIO;
	return 0;
}

/* de_remove() of set number set (its reports say so). */
static int remove_set(de_ctx *ctx, int dirfd, const struct de_target *targets,
		      size_t n, const struct de_hooks *hooks,
		      const struct de_opts *opts, struct de_summary *sum,
		      unsigned set)
{
	struct de__node *r;
	struct de__global g;
	struct de__batch b;
	int rc, batch = 0;

	if (!ctx || (n && !targets) || dirfd < 0)
		return -EINVAL;
	if (getpid() != ctx->pid)
		return -ECHILD;
	rc = de__ctx_start(ctx);
	if (rc)
		return rc;
	reset_run(ctx, hooks, opts);
	rc = new_root(ctx, NULL, dirfd, &r);
	if (rc)
		return rc;
	r->set = set;
	ctx->run.root = r;
	plan_run(ctx, r->fstype);
	rc = add_targets(ctx, r, dirfd, targets, n, ctx->run.global);
	if (rc) {
		de__node_free(ctx, r);
		ctx->run.root = NULL;
		return rc;
	}
	if (ctx->run.serial)
		de__prepare_serial(ctx, r);
	else if (ctx->run.global && ctx->run.ordered)
		batch = batch_start(ctx, r, &g, &b,
				    ctx->cfg.schedule == DE_SCHED_AUTO);
	else if (ctx->run.global)
		run_global(ctx, r);
	else
		de__phase2(ctx, r, 0);
	if (ctx->run.ordered) {
		/* The root's fd is never closed: it needs no pin to start. */
		if (ordered_walk(ctx, r, -1) >= 0)
			de__node_unpin(ctx, r);
		if (batch)
			batch_end(ctx, r);
	}
	else
		drain_events(ctx);
	return end_run(ctx, r, sum);
}

/* See delete_engine.h. */
int de_remove(de_ctx *ctx, int dirfd, const struct de_target *targets,
	      size_t n, const struct de_hooks *hooks,
	      const struct de_opts *opts, struct de_summary *sum)
{
	return remove_set(ctx, dirfd, targets, n, hooks, opts, sum, 0);
}

static void add_summary(struct de_summary *to, const struct de_summary *s)
{
	int t;

	for (t = 0; t < DE_T_COUNT; t++)
		to->removed[t] += s->removed[t];
	to->removed_total += s->removed_total;
	to->failed += s->failed;
	to->not_empty += s->not_empty;
	to->skipped += s->skipped;
	to->mounts += s->mounts;
	to->kept += s->kept;
	to->vanished += s->vanished;
}

/*
 * de_remove_sets() as one call per set, the limit carried from one to
 * the next.  A setup failure or a cancel ends it; -EDQUOT wins over -EIO
 * as in one call.
 */
static int sets_in_turn(de_ctx *ctx, const struct de_set *sets, size_t n,
			const struct de_hooks *hooks,
			const struct de_opts *opts, struct de_summary *sum)
{
	struct de_opts o = { 0, -1 };
	struct de_summary s, total;
	int rc, worst = 0;
	size_t k;

	if (opts)
		o = *opts;
	if (o.max_delete < 0)
		o.max_delete = ctx->cfg.max_delete;
	memset(&total, 0, sizeof(total));
	for (k = 0; k < n; k++) {
		rc = remove_set(ctx, sets[k].dirfd, sets[k].targets, sets[k].n,
				hooks, &o, &s, (unsigned)k);
		if (rc && rc != -EIO && rc != -EDQUOT)
			return rc;
		add_summary(&total, &s);
		if (rc == -EDQUOT || (rc == -EIO && !worst))
			worst = rc;
		/* What is left of the limit, the caller's takes counted. */
		if (o.max_delete >= 0)
			o.max_delete = ctx->run.limit_left > 0 ?
				       ctx->run.limit_left : 0;
	}
	if (sum)
		*sum = total;
	return worst;
}

/*
 * Whether de_remove_sets() is one run in the global schedule: more than
 * one set, all on one device (one journal, one inode table), where the
 * schedule is forced or the device's reads told a slow disk
 * (de_note_read), and no hook decides entry by entry.  The plan
 * (policy.c) has the last word, after the run is set up.
 */
static int sets_together(de_ctx *ctx, const struct de_set *sets, size_t n,
			 const struct de_hooks *hooks,
			 const struct de_opts *opts)
{
	struct de__st st;
	dev_t dev = 0;
	size_t k;

	if (n < 2 || ctx->cfg.schedule == DE_SCHED_DIRS ||
	    ((ctx->cfg.flags | (opts ? opts->flags : 0)) & DE_F_DRY_RUN) ||
	    (hooks && (hooks->enter_dir || hooks->dispose || hooks->ask_dir)))
		return 0;
	for (k = 0; k < n; k++) {
		if (sets[k].dirfd < 0 || (sets[k].n && !sets[k].targets) ||
		    de__fstat(ctx, sets[k].dirfd, ".", &st))
			return 0;
		if (k && st.dev != dev)
			return 0;
		dev = st.dev;
	}
	return ctx->cfg.schedule == DE_SCHED_GLOBAL ||
	       de__dev_slow(ctx, dev) == 1;
}

/* See delete_engine.h. */
int de_remove_sets(de_ctx *ctx, const struct de_set *sets, size_t n,
		   const struct de_hooks *hooks, const struct de_opts *opts,
		   struct de_summary *sum)
{
	struct de__node *r, *b0 = NULL;
	struct de__global g;
	struct de__batch b;
	size_t k;
	int rc;

	if (!ctx || (n && !sets))
		return -EINVAL;
	if (getpid() != ctx->pid)
		return -ECHILD;
	if (!sets_together(ctx, sets, n, hooks, opts))
		return sets_in_turn(ctx, sets, n, hooks, opts, sum);
	rc = de__ctx_start(ctx);
	if (rc)
		return rc;
	reset_run(ctx, hooks, opts);
	/* A root of its own holds the sets' directories, one entry each,
	 * neither removed nor reported: the batch walk goes through them
	 * in turn, and a batch spans them. */
	r = de__node_new(ctx, NULL, "", 0, 0);
	if (!r)
		return -ENOMEM;
	r->state = NS_SCANNED;
	ctx->run.root = r;
	for (k = 0; k < n && !rc; k++) {
		struct de__node *c;

		rc = de__add_ent(r, "", 0, 0, DE_T_DIR);
		if (!rc)
			rc = new_root(ctx, r, sets[k].dirfd, &c);
		if (rc)
			break;
		c->set = (unsigned)k;
		r->ents[k].done = 1;
		r->ents[k].child = c;
		rc = add_targets(ctx, c, sets[k].dirfd, sets[k].targets,
				 sets[k].n, 1);
		if (!k)
			b0 = c;
	}
	if (!rc) {
		r->dev = b0->dev;
		r->fstype = b0->fstype;
		ctx->run.ordered = 1;
		plan_run(ctx, r->fstype);
		if (!ctx->run.global || ctx->run.serial)
			rc = 1;		/* the plan says not here */
	}
	if (rc) {
		while (ctx->run.live)
			de__node_free(ctx, ctx->run.live);
		ctx->run.root = NULL;
		return rc < 0 ? rc : sets_in_turn(ctx, sets, n, hooks, opts, sum);
	}
	if (batch_start(ctx, r, &g, &b, 0))
		(void)ordered_walk(ctx, r, -1);
	batch_end(ctx, r);
	return end_run(ctx, r, sum);
}

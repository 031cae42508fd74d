/*
 * run.c - de_remove() and de_remove_sets(): the calling thread's side.
 *
 * The calling thread sets up the root (the caller's dirfd and its
 * targets) and plans the run (policy.c de__plan), then walks the tree
 * (walk.c) or sleeps on ctx->cv and delivers reports and progress as
 * work completes (emit.c); workers only touch the file system and the
 * tree.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After a cancel: let everything started finish, start nothing new. */
static void drain_cancel(de_ctx *ctx)
{
	struct de__node *c;

	for (;;) {
		int again = 0;

		pthread_mutex_lock(&ctx->mu);
		while ((c = ctx->run.tree.deferred)) {
			de__undefer(ctx, c, 0);
			pthread_mutex_unlock(&ctx->mu);
			de__task(&c->work, ctx->caller_buf);
			pthread_mutex_lock(&ctx->mu);
		}
		if (ctx->run.plan.dir_hooks && !de__serial(ctx)) {
			for (c = ctx->run.tree.live; c; c = c->links.lnext) {
				if (c->state == NS_SCANNED && !c->fl.p2sub &&
				    c != ctx->run.root) {
					c->fl.p2sub = 1;
					pthread_mutex_unlock(&ctx->mu);
					de__unlink_phase(ctx, c, DE__NO_PIN,
							 DE__P2_NOW);
					again = 1;
					pthread_mutex_lock(&ctx->mu);
					break;
				}
			}
		}
		if (!again) {
			if (de__serial(ctx) ? ctx->run.tree.scans_inflight == 0 :
			    ctx->run.root->state == NS_FINAL) {
				pthread_mutex_unlock(&ctx->mu);
				return;
			}
			de__sleep_locked(ctx);
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
		e = &r->ls.ents[r->ls.nents - 1];
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
	ctx->run.fill.t = opts ? opts->fill : NULL;
	ctx->run.fill.n = ctx->run.fill.t ? opts->nfill : 0;
	ctx->run.flags = flags;

	memset(&ctx->run.nohooks, 0, sizeof(ctx->run.nohooks));
	ctx->run.hooks = hooks ? hooks : &ctx->run.nohooks;
	ctx->run.limit.left = max_delete >= 0 ? max_delete : -1;
	ctx->run.limit.hit = 0;
	__atomic_store_n(&ctx->run.cancel, 0, __ATOMIC_RELAXED);
	ctx->run.tree.nfds = 0;
	ctx->run.tree.win_live = 0;
	ctx->run.tree.scans_inflight = 0;
	ctx->run.tree.live = NULL;
	ctx->run.tree.deferred = NULL;
	ctx->run.ev.head = ctx->run.ev.tail = NULL;
	ctx->run.ev.count = 0;
	ctx->run.ev.ents = 0;
	/* ctx->sched is not reset: internal.h, struct de__sched, says why. */
	memset(&ctx->run.sum, 0, sizeof(ctx->run.sum));
	memset(&ctx->run.rep.prog, 0, sizeof(ctx->run.rep.prog));
	ctx->run.rep.t0_ms = ctx->run.rep.last_prog_ms = de__now_ms();
	__atomic_store_n(&ctx->run.rep.unlinked, 0, __ATOMIC_RELAXED);
	ctx->run.caller = pthread_self();
	ctx->run.rep.tick = de__caller_tick;
	ctx->run.rep.pbuf_node = NULL;
	ctx->run.walk.gwin = NULL;
	ctx->run.walk.batch = NULL;
}

/* See delete_engine.h.  limit_left belongs to the calling thread: only
 * serial runs (and every run with max_delete is one) consult it, and
 * there only the calling thread removes. */
int de_limit_take(de_ctx *ctx, unsigned long long n)
{
	if (!ctx || !ctx->run.root || !de__is_caller(ctx))
		return -EINVAL;
	if (ctx->run.limit.left < 0)
		return 0;
	if ((unsigned long long)ctx->run.limit.left <= n)
		ctx->run.limit.left = 0;
	else
		ctx->run.limit.left -= (long long)n;
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
	r->fl.base = parent != NULL;
	r->fd = dirfd;
	r->cnt.pins = 1;
	r->dev = st.dev;
	r->ino = st.ino;
	r->mode = st.mode;
	r->fstype = de__fs_type(dirfd);
	de__set_state(r, NS_SCANNED);
	*out = r;
	return 0;
}

/* How many workers this run may use, and the plan for its file system
 * (policy.c de__plan). */
static void plan_run(de_ctx *ctx, long fstype, dev_t dev, int sets)
{
	unsigned t = de__plan(ctx, fstype, dev, sets);

	/* More workers than CPUs only where they wait on a server, and
	 * only where they unlink. */
	if (t > ctx->pool.nthreads && !ctx->cfg.threads && !de__serial(ctx))
		de__ctx_grow(ctx, t);
	if (t > ctx->pool.nthreads)
		t = ctx->pool.nthreads;
	/* A thread at work holds about two fds (a directory and the child
	 * it opens): under a tight RLIMIT_NOFILE, fewer threads rather than
	 * threads waiting for fds. */
	if (t > 1 && (unsigned)ctx->fd_budget < 2 * t)
		t = ctx->fd_budget > 2 ? (unsigned)ctx->fd_budget / 2 : 1;
	de__pool_limit(&ctx->pool, t);
	de__plan_workers(ctx, fstype, t);
}

/* See delete_engine_test.h. */
int de_test_plan(de_ctx *ctx, long fstype, const struct de_hooks *hooks,
		 const struct de_opts *opts, char *buf, size_t len)
{
	int rc = de__ctx_start(ctx);

	if (rc)
		return rc;
	reset_run(ctx, hooks, opts);
	plan_run(ctx, fstype, 0, 0);
	return de_explain(ctx, buf, len);
}

/* Wait for the run to end, free what is left, and say how it went. */
static int end_run(de_ctx *ctx, struct de__node *r, struct de_summary *sum)
{
	if (de__cancelled(ctx))
		drain_cancel(ctx);
	else if (!de__serial(ctx))
		de__wait_state(ctx, r, NS_FINAL);
	/* No worker is still leaving its last item when this returns: the
	 * caller may fork() (pool.c). */
	if (ctx->pool_ready)
		de__pool_quiesce(&ctx->pool);
	de__push_end(ctx);
	/* Free what is left: the root, and after a cancel everything. */
	while (ctx->run.tree.live)
		de__node_free(ctx, ctx->run.tree.live);
	ctx->run.rep.pbuf_node = NULL;
	ctx->run.root = NULL;
	de__maybe_progress(ctx, 1);
	if (sum)
		*sum = ctx->run.sum;
	if (de__cancelled(ctx))
		return -ECANCELED;
	if (ctx->run.limit.hit || ctx->run.sum.skipped)
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
	plan_run(ctx, r->fstype, r->dev, 0);
	rc = add_targets(ctx, r, dirfd, targets, n, de__global(ctx));
	if (rc) {
		de__node_free(ctx, r);
		ctx->run.root = NULL;
		return rc;
	}
	switch (ctx->run.plan.mode) {
	case DE__M_SERIAL:
		de__prepare_serial(ctx, r);
		break;
	case DE__M_BATCH:
		batch = de__batch_start(ctx, r, &g, &b, ctx->run.plan.probe);
		break;
	case DE__M_GLOBAL:
		de__run_global(ctx, r);
		break;
	case DE__M_DIRS:
	case DE__M_ORDERED:
		de__unlink_phase(ctx, r, DE__NO_PIN, DE__P2_NOW);
		break;
	}
	if (de__ordered(ctx)) {
		/* The root's fd is never closed: it needs no pin to start. */
		if (de__ordered_walk(ctx, r, -1) >= 0)
			de__node_unpin(ctx, r);
		if (batch)
			de__batch_end(ctx, r);
	}
	else
		de__drain_events(ctx);
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
	struct de_opts o = { 0, -1, NULL, 0 };
	struct de_summary s, total;
	int rc, worst = 0;
	size_t k;

	if (opts)
		o = *opts;
	if (n > 1)	/* the fill is one directory's (delete_engine.h) */
		o.fill = NULL;
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
			o.max_delete = ctx->run.limit.left > 0 ?
				       ctx->run.limit.left : 0;
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

/*
 * de_remove_sets()' root, a node of its own holding the sets' directories,
 * one entry each, neither removed nor reported: the batch walk goes
 * through them in turn, and a batch spans them.  Returns 0 or a negative
 * errno, with what was made in the live list.
 */
static int sets_root(de_ctx *ctx, const struct de_set *sets, size_t n)
{
	struct de__node *r = de__node_new(ctx, NULL, "", 0, 0);
	size_t k;
	int rc = 0;

	if (!r)
		return -ENOMEM;
	de__set_state(r, NS_SCANNED);
	ctx->run.root = r;
	for (k = 0; k < n && !rc; k++) {
		struct de__node *c;

		rc = de__add_ent(r, "", 0, 0, DE_T_DIR);
		if (!rc)
			rc = new_root(ctx, r, sets[k].dirfd, &c);
		if (rc)
			break;
		c->set = (unsigned)k;
		r->ls.ents[k].done = 1;
		r->ls.ents[k].child = c;
		rc = add_targets(ctx, c, sets[k].dirfd, sets[k].targets,
				 sets[k].n, 1);
		if (!k) {
			r->dev = c->dev;
			r->fstype = c->fstype;
		}
	}
	return rc;
}

/* See delete_engine.h. */
int de_remove_sets(de_ctx *ctx, const struct de_set *sets, size_t n,
		   const struct de_hooks *hooks, const struct de_opts *opts,
		   struct de_summary *sum)
{
	struct de__node *r;
	struct de__global g;
	struct de__batch b;
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
	rc = sets_root(ctx, sets, n);
	if (!rc) {
		plan_run(ctx, ctx->run.root->fstype, ctx->run.root->dev, 1);
		if (ctx->run.plan.mode != DE__M_BATCH)
			rc = 1;		/* the plan says not here */
	}
	if (rc) {
		while (ctx->run.tree.live)
			de__node_free(ctx, ctx->run.tree.live);
		ctx->run.root = NULL;
		return rc < 0 ? rc : sets_in_turn(ctx, sets, n, hooks, opts, sum);
	}
	r = ctx->run.root;
	if (de__batch_start(ctx, r, &g, &b, 0))
		(void)de__ordered_walk(ctx, r, -1);
	de__batch_end(ctx, r);
	return end_run(ctx, r, sum);
}

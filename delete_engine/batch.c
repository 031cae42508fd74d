/*
 * batch.c - the batch walk's batch (walk.c): the entries the walk
 * reached, in canonical order, their files unlinked in one inode order
 * through their directories' pins, the walk making the rest of the
 * removals and every report.  global.c's windows read ahead of it; the
 * why of both is at the top of global.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* See internal.h. */
void de__batch_init(struct de__batch *b, const struct de__global *g)
{
	memset(b, 0, sizeof(*b));
	b->ents_max = g->ents_max;
	b->runs_max = g->dirs_max;
	b->carry_fd = -1;
}

/* Room for one more element of size in *p, of *cap (first: the first
 * capacity).  Returns 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t used, size_t size, size_t first)
{
	size_t c = *cap ? 2 * *cap : first;
	void *q;

	if (used < *cap)
		return 0;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* See internal.h. */
int de__batch_add(struct de__batch *b, struct de__node *n, size_t i)
{
	int new_run = !b->nruns || b->runs[b->nruns - 1].n != n;

	if (grow((void **)&b->v, &b->vcap, b->nv, sizeof(*b->v), 256) < 0 ||
	    (new_run && grow((void **)&b->runs, &b->rcap, b->nruns,
			     sizeof(*b->runs), 64) < 0))
		return -ENOMEM;
	if (new_run) {
		b->runs[b->nruns].n = n;
		b->runs[b->nruns++].fd = -1;
	}
	b->v[b->nv].n = n;
	b->v[b->nv].i = (uint32_t)i;
	b->v[b->nv++].run = (uint32_t)(b->nruns - 1);
	b->ndirs += n->ls.ents[i].child != NULL;
	return 0;
}

/* See internal.h. */
int de__batch_full(const struct de__batch *b)
{
	return b->nv >= b->ents_max || b->nruns >= b->runs_max;
}

/*
 * Check that each directory of the batch is still in its place before
 * anything of it is removed (unlink.c de__check_place), first, while the
 * batch holds no pins: under a tight fd limit a check needs fds of its
 * own.  Then pin them, in the order the walk reached them.  The walk goes
 * up the tree from one run to the next, so each is reopened, if its fd
 * was closed, as ".." of the one before (node.c de__node_pin): a chain
 * deeper than the fd budget costs one openat a level, not a walk down
 * from the root.  The last batch's last directory is held for the first
 * one (b->carry).  A pin that fails (EMFILE) leaves its run's files to
 * the walk, which removes them one by one.
 */
static void pin_runs(de_ctx *ctx, struct de__batch *b)
{
	struct de__node *prev = b->carry;
	int prev_fd = b->carry_fd;
	size_t r;

	for (r = 0; r < b->nruns; r++)
		(void)de__check_place(ctx, b->runs[r].n);
	for (r = 0; r < b->nruns; r++) {
		struct de__brun *u = &b->runs[r];
		int hint = prev && prev->parent == u->n ? prev_fd : -1;

		u->fd = de__node_pin(ctx, u->n, hint);
		prev = u->n;
		prev_fd = u->fd;
	}
	if (b->carry && b->carry_fd >= 0)
		de__node_unpin(ctx, b->carry);
	b->carry = NULL;
	b->carry_fd = -1;
}

/*
 * Let go of the batch's pins, but for the last run's, the next batch's
 * carry: the walk frees a directory once it is removed, and a pin does
 * not keep a node (node.c).  The last run's directory is not removed in
 * this batch, as its rmdir comes after its entries, in a run of its
 * parent.  The fds stay cached for the walk's rmdirs (node.c).
 */
static void unpin_runs(de_ctx *ctx, struct de__batch *b)
{
	size_t r;

	for (r = 0; r < b->nruns; r++) {
		struct de__brun *u = &b->runs[r];

		if (u->fd < 0)
			continue;
		if (r == b->nruns - 1) {
			b->carry = u->n;
			b->carry_fd = u->fd;
		} else {
			de__node_unpin(ctx, u->n);
		}
		u->fd = -1;
	}
}

/* The batch's files in one inode order, through its runs' pins, each
 * removed by fn (walk.c remove_file: the dispose hook or an unlink). */
static void unlink_files(de_ctx *ctx, struct de__batch *b, de__file_fn fn)
{
	struct de__ino_ent *v;
	size_t nv = 0, k;

	v = malloc(b->nv * sizeof(*v));
	if (!v)
		return;		/* the walk unlinks them in its order */
	for (k = 0; k < b->nv; k++) {
		struct de__node *n = b->v[k].n;
		struct de__ent *e = &n->ls.ents[b->v[k].i];

		if (e->child || e->type == DE_T_DIR || e->done ||
		    e->action != DE_A_DELETE || b->runs[b->v[k].run].fd < 0)
			continue;
		v[nv].ino = e->ino;
		v[nv].n = n;
		v[nv].i = b->v[k].i;
		v[nv].k = b->v[k].run;
		nv++;
	}
	de__sort_by_ino(v, nv);
	if (de__want_push(ctx))
		de__push_start(ctx, nv);
	for (k = 0; k < nv && !de__cancelled(ctx); k++) {
		struct de__ent *e = &v[k].n->ls.ents[v[k].i];

		if (fn(ctx, v[k].n, b->runs[v[k].k].fd, e))
			de__node_keep(ctx, v[k].n);
		else if (e->res == DE_R_REMOVED && ctx->run.limit.left > 0)
			ctx->run.limit.left--;
	}
	free(v);
}

/*
 * Whether the batch stays within the limit whatever the order of its
 * removals: then its files go in inode order, else entry by entry in
 * canonical order (the walk), which stops exactly at the limit.  Room is
 * kept for one removal the caller makes itself for each directory
 * (de_limit_take() from a report: rsync retries the rmdir of one the
 * engine kept), as its report comes after the batch's removals.  The
 * dispose hook may take any number (rsync: what a backup deletes in its
 * way), so with it a limit goes entry by entry.
 */
static int within_limit(const de_ctx *ctx, const struct de__batch *b)
{
	return ctx->run.limit.left < 0 ||
	       (!ctx->run.hooks->dispose &&
		(long long)(b->nv + b->ndirs) <= ctx->run.limit.left);
}

/* See internal.h. */
void de__batch_unlink(de_ctx *ctx, struct de__batch *b, de__file_fn fn)
{
	pin_runs(ctx, b);
	if (within_limit(ctx, b))
		unlink_files(ctx, b, fn);
	unpin_runs(ctx, b);
}

/* See internal.h. */
void de__batch_done(struct de__batch *b)
{
	b->nv = 0;
	b->nruns = 0;
	b->ndirs = 0;
}

/* See internal.h. */
void de__batch_free(de_ctx *ctx, struct de__batch *b)
{
	if (b->carry && b->carry_fd >= 0)
		de__node_unpin(ctx, b->carry);
	free(b->v);
	free(b->runs);
	memset(b, 0, sizeof(*b));
	b->carry_fd = -1;
}

/*
 * global.c - the global schedule: one inode order across a window of the
 * tree, for disks where the cost is requests, not CPU.
 *
 * The per-directory schedule (sched.c) unlinks each directory's files in
 * inode order, one directory after another.  When a tree grew over time,
 * the inodes of one directory are spread over the whole inode table, so
 * every directory dirties most inode-table blocks again.  On ext4, once
 * what is dirtied exceeds the journal, each block is written home again
 * and again: on a rotating disk or an IOPS-capped volume that is the
 * whole cost (bench/slowdisk, docs/BENCHMARKS.md, "Slow disks").
 *
 * Here the calling thread reads a window of directories (depth first),
 * then unlinks every non-directory of the window in one ascending inode
 * order, so each inode-table block is dirtied once per window; the
 * directories go bottom-up as their last entry goes (de__node_release).
 * A window closes when it holds DE__WIN_ENTS entries (the sort's memory),
 * fd_budget / 2 directories (their fds stay cached while they are
 * unlinked from), or more directory blocks than half a journal
 * transaction: the directory blocks are what every unlink of the window
 * dirties again, and must stay in the journal for the window to pay.
 * On ext4 the windows ahead fill its order's holes ("Filling the holes").
 *
 * DE_SCHED_AUTO starts the same way, timing the reads of the first
 * directories (up to DE__PROBE_DIRS whose listings are small enough that
 * the time is the disk's, not the CPU's).  When they came fast (policy.c
 * de__slow_reads), the window and the rest of the tree go to the pool,
 * directory by directory, as if the run had begun there.
 *
 * Everything else is shared with the per-directory schedule: the same
 * nodes and fd cache (node.c), scan (scan.c: fd-relative, O_NOFOLLOW,
 * identity and mount checks, -x), unlink, rmdir and reports.
 *
 * A run that reports in canonical order (ordered, or with max_delete)
 * takes the schedule too, as the batch walk (walk.c): the same windows are
 * read ahead of the walk (de__global_read), and the walk gathers what it
 * reaches, in canonical order, into a batch (struct de__batch).  The
 * reads are depth first in the order the walk goes, so when the walk
 * needs a directory not read yet, everything read before it has been
 * walked: the batch is a run of consecutive entries of the canonical
 * order.  de__batch_unlink() then unlinks its files in one inode order,
 * and the walk makes the rmdirs and the reports in canonical order.  A
 * limit stays exact: a batch that could pass it goes entry by entry.
 * Only runs that decide entry by entry (a dry run, the dispose, ask_dir
 * and enter_dir hooks) keep the per-directory schedule (de__plan).
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of ext4 directory entries for n's listing, as blocks (at least
 * one): an estimate of what each of its unlinks dirties. */
static size_t dir_blocks(const struct de__node *n)
{
	return de__listing_bytes(n) / 4096 + 1;
}

/* Room for k more nodes on the stack. */
static int reserve(struct de__global *g, size_t k)
{
	if (g->nstack + k > g->stack_cap) {
		size_t cap = g->stack_cap ? g->stack_cap : 64;
		struct de__node **s;

		while (cap < g->nstack + k)
			cap *= 2;
		s = realloc(g->stack, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		g->stack = s;
		g->stack_cap = cap;
	}
	return 0;
}

/* Add n to the window, and *pin, n's pin if held, handed over to it
 * (left to the caller on failure). */
static int win_add(struct de__global *g, struct de__node *n,
		   struct de__pin *pin)
{
	if (g->nwin == g->win_cap) {
		size_t cap = g->win_cap ? 2 * g->win_cap : 64;
		struct de__node **w = realloc(g->win, cap * sizeof(*w));
		struct de__pin *f;

		if (!w)
			return -ENOMEM;
		g->win = w;
		f = realloc(g->wpin, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		g->wpin = f;
		g->win_cap = cap;
	}
	g->wpin[g->nwin] = de__pin_move(pin);
	g->win[g->nwin++] = n;
	return 0;
}

/*
 * A stack entry that stands for the leave_dir hook of a directory whose
 * enter_dir the reader called (read_window): it sits below the
 * directory's children, so it comes up once they all are read.
 */
static struct de__node *leave_mark(struct de__node *n)
{
	return (struct de__node *)((uintptr_t)n | 1);
}

static struct de__node *marked(const struct de__node *s)
{
	return (uintptr_t)s & 1 ?
	       (struct de__node *)((uintptr_t)s & ~(uintptr_t)1) : NULL;
}

/* Call the leave_dir hooks that came up on the stack. */
static void leave_read(de_ctx *ctx, struct de__global *g)
{
	struct de__node *n;

	while (g->nstack && (n = marked(g->stack[g->nstack - 1]))) {
		g->nstack--;
		de__leave_dir(ctx, n);
	}
}

/*
 * Make n's child nodes and push them, last first, so that the first is
 * read next (depth first, in listing order), above n's leave mark if the
 * reader entered n.  Without memory for the stack, n's directories fail
 * with ENOMEM, as when sched.c cannot make a node, and n is left now.
 */
static void descend(de_ctx *ctx, struct de__global *g, struct de__node *n)
{
	size_t i, dirs = 0;
	int mark = n->fl.hooked == DE__HOOK_ENTERED;

	for (i = 0; i < n->ls.nents; i++)
		dirs += n->ls.ents[i].type == DE_T_DIR && !n->ls.ents[i].done &&
			n->ls.ents[i].action == DE_A_DELETE;
	if (reserve(g, dirs + (size_t)mark) < 0) {
		for (i = 0; i < n->ls.nents; i++) {
			struct de__ent *e = &n->ls.ents[i];

			if (e->type != DE_T_DIR || e->done ||
			    e->action != DE_A_DELETE)
				continue;
			e->res = DE_R_FAILED;
			e->op = DE_OP_OPEN;
			e->err = ENOMEM;
			e->done = 1;
			de__node_keep(ctx, n);
		}
		if (mark)
			de__leave_dir(ctx, n);
		mark = 0;
	}
	de__make_children(ctx, n);
	if (mark)
		g->stack[g->nstack++] = leave_mark(n);
	for (i = n->ls.nents; i-- > 0;)
		if (n->ls.ents[i].child)
			g->stack[g->nstack++] = n->ls.ents[i].child;
}

/*
 * Let go of the pins the window holds on its directories, taken as each
 * was read so that reading a child and unlinking the files find its fd
 * held (flush hands them to the unlink phase, DE__P2_LEFT, instead).
 * Pinned for each file, a directory whose fd was closed for the budget
 * was reopened from its nearest held ancestor every time: a chain
 * deeper than the budget took minutes (test/deep_reopens.c).
 */
static void unpin_window(de_ctx *ctx, struct de__global *g)
{
	size_t k;

	for (k = 0; k < g->nwin; k++)
		if (g->wpin[k].n)
			de__pin_drop(ctx, &g->wpin[k]);
}

/*
 * The entries of the window's directories k0 to k1 still to unlink that
 * are not directories (regular files only: regular), unsorted; *nv of
 * them, or NULL without memory for them.  A directory not pinned gives
 * none with regular (fillers() touches through the pin).
 */
static struct de__ino_ent *window_files(struct de__global *g, size_t k0,
					size_t k1, int regular, size_t *nv)
{
	struct de__ino_ent *v;
	size_t i, k, ents = 0;

	for (k = k0; k < k1; k++)
		ents += g->win[k]->ls.nents;
	v = ents ? malloc(ents * sizeof(*v)) : NULL;
	*nv = 0;
	for (k = k0; v && k < k1; k++) {
		struct de__node *n = g->win[k];

		if (regular && !g->wpin[k].n)
			continue;
		for (i = 0; i < n->ls.nents; i++) {
			const struct de__ent *e = &n->ls.ents[i];

			if (e->type == DE_T_DIR || e->action != DE_A_DELETE ||
			    e->done || (regular && e->type != DE_T_FILE))
				continue;
			v[*nv].ino = e->ino;
			v[*nv].n = n;
			v[*nv].i = (uint32_t)i;
			v[*nv].k = (uint32_t)k;
			(*nv)++;
		}
	}
	return v;
}

/*
 * The files of the window's directories k0 to k1 to unlink, sorted by
 * inode; *nv of them, or NULL without memory for them.  Where a
 * directory read last makes the window's files' entries more than a
 * run's bytes (a huge one: the window closes only after it), the order
 * is cut into runs of the window's listings, each sorted by inode, as
 * de__inode_order() cuts one directory (order.c de__run_bytes).  A
 * window of small directories closes before its files fill the bound
 * (read_window counts each directory's blocks rounded up): one order.
 */
static struct de__ino_ent *window_order(struct de__global *g, size_t k0,
					size_t k1, size_t *nv)
{
	struct de__ino_ent *v = window_files(g, k0, k1, 0, nv);

	if (v)
		de__sort_ino_runs(v, *nv, de__run_bytes(g->win + k0, k1 - k0));
	return v;
}

/* Unlink file i of window directory n through *pin, the window's (none
 * tried: pin it now for the window; a take that failed: its error). */
static void window_unlink(de_ctx *ctx, struct de__node *n, size_t i,
			  struct de__pin *pin)
{
	struct de__ent *e = &n->ls.ents[i];
	int kept;

	if (!pin->n && pin->fd == INT_MIN)
		*pin = de__pin_take(ctx, n, -1);
	if (de__cancelled(ctx)) {
		e->res = DE_R_SKIPPED;
		kept = 1;
	} else if (!pin->n) {
		e->res = pin->fd == -ENOENT ? DE_R_VANISHED : DE_R_FAILED;
		e->op = e->res == DE_R_FAILED ? DE_OP_OPEN : 0;
		e->err = -pin->fd;
		e->done = 1;
		kept = e->res == DE_R_FAILED;
	} else {
		kept = de__unlink_ent(ctx, n, pin->fd, e, 1);
	}
	if (kept)
		de__node_keep(ctx, n);
}

/*
 * Filling the holes of a window's inode order.  On ext4 an unlink
 * dirties the inode-table block of its inode, and the blocks a window's
 * order dirtied are written home in runs.  Where the tree was grown
 * shuffled, a window's files sit two or three to a block, and a block
 * with none of them ends a run: each run is a request, and each costs a
 * rotation on a rotating disk (bench/results/2026-12-06/NOTES.md,
 * "Holes").  So the tree is read on, DE__FILL_AHEAD windows past the
 * window, and where the order skips up to DE__FILL_GAP blocks, one file
 * of the rest in each skipped block is marked changed (sys.c
 * de__touch_at: its mode set to what it is), which dirties that block in
 * the same run (order.c de__fill_runs_at).  The file is one this run
 * removes later, a regular file of the tree found where it was listed;
 * its ctime is all that changes, and only shows if the run stops before
 * it comes to it.  Where the window's entries or fds stop the read
 * short, the directories next on the stack are listed for the holes
 * left, not read (peek.c).  The window holds a quarter of a
 * transaction's directory blocks, not half: the checkpoint writes home
 * each directory block that the two transactions after its last did not
 * log, and a window of fewer blocks gives each of them more of every
 * transaction's unlinks (tunables.h DE__FILL_AHEAD).  The rest is then
 * read on, and its first part is the next window.  A huge directory's
 * runs fill from the DE__FILL_AHEAD after them; where the window holds
 * the root, from the call's de_opts.fill too (order.c de__given).  Only
 * where the plan found a jbd2 journal (ext4) on a device not known to
 * read fast, not in ordered runs, whose batches follow the walk
 * (de__global_read), and never under DE_SCHED_DIRS (de__want_fill).
 */

/* A filled window's directory blocks: half an unfilled one's (above). */
static size_t fill_blocks(const struct de__global *g)
{
	return g->blocks_max > 1 ? g->blocks_max / 2 : 1;
}

/* How far read_window() reads: filling, the window and DE__FILL_AHEAD more. */
static size_t read_blocks(const struct de__global *g)
{
	return g->fill ? fill_blocks(g) * (1 + DE__FILL_AHEAD) : g->blocks_max;
}

/*
 * The length of the window's first part: directories in read order up to
 * the filled window's blocks (see above).  Where the read stopped short
 * of the windows ahead, at its entries or fds, the directories next on
 * the stack fill too (peek()).  At the end of the tree, a rest smaller
 * than the part goes with it: the last part has nothing to fill from,
 * and a small one alone would sweep the inode table sparsely
 * (2026-12-07/NOTES.md).
 */
static size_t first_part(const struct de__global *g)
{
	size_t k, j, ents = 0, blocks = 0, rest = 0;

	for (k = 0; k < g->nwin; k++) {
		if (k && (ents >= g->ents_max || k >= g->dirs_max ||
			  blocks >= fill_blocks(g)))
			break;
		ents += g->win[k]->ls.nents;
		blocks += dir_blocks(g->win[k]);
	}
	for (j = k; !g->nstack && j < g->nwin; j++)
		rest += dir_blocks(g->win[j]);
	return !g->nstack && rest < blocks ? g->nwin : k;
}

/* What may fill the holes (see above) of the window's first k0
 * directories' order, by inode, *nf of them, or NULL: the rest's files,
 * and the call's de_opts.fill where the root is among the k0.  The rest
 * is checked in place first (unlink.c de__check_place): a directory
 * that left the tree fills nothing, and has its entries decided. */
static struct de__ino_ent *fillers(de_ctx *ctx, struct de__global *g,
				   size_t k0, size_t *nf)
{
	struct de__ino_ent *f;
	size_t k;

	for (k = k0; k < g->nwin; k++)
		if (g->wpin[k].n)
			(void)de__check_place(ctx, g->win[k]);
	f = window_files(g, k0, g->nwin, 1, nf);
	for (k = 0; k < k0 && g->win[k] != ctx->run.root; k++)
		;
	return de__given(ctx, k < k0 ? ctx->run.root : NULL, f, nf);
}

/* The window's order v, as de__fill_runs (order.c) reads it. */
struct win_order {
	const struct de__global *g;
	const struct de__ino_ent *v;
	const struct de__peek *peek;
};

static uint64_t win_ino(const void *arg, size_t i)
{
	return ((const struct win_order *)arg)->v[i].ino;
}

/* A regular file whose directory the window holds pinned. */
static int win_filler(const void *arg, size_t i, struct de__ino_ent *f)
{
	const struct win_order *o = arg;
	const struct de__ino_ent *e = &o->v[i];

	if (e->n->ls.ents[e->i].type != DE_T_FILE || !o->g->wpin[e->k].n)
		return 0;
	*f = *e;
	return 1;
}

static int win_touch(de_ctx *ctx, const void *arg,
		     const struct de__ino_ent *f)
{
	const struct win_order *o = arg;

	if (f->k == DE__GIVEN)
		return de__touch_given(ctx, -1, f);
	return f->k == DE__PEEKED ? de__peek_touch(ctx, o->peek, f) :
	       de__touch_listed(ctx, o->g->wpin[f->k].fd, f);
}

/* Unlink v, the window's order.  Filling, each run (a huge directory's:
 * window_order) has its holes filled from the runs after it, the last
 * from f (the rest of the window, or the call's fill) and pk's peeked. */
static void unlink_order(de_ctx *ctx, struct de__global *g,
			 const struct de__ino_ent *v, size_t nv,
			 const struct de__ino_ent *f, size_t nf,
			 const struct de__peek *pk)
{
	struct win_order o = { .g = g, .v = v, .peek = pk };
	struct de__fill_runs r = {
		.n = nv, .ino = win_ino, .filler = win_filler,
		.touch = win_touch, .arg = &o, .after = f, .nafter = nf,
	};
	size_t i;

	if (g->fill)
		de__push_start(ctx, nv);
	for (i = 0; i < nv; i++) {
		if (g->fill)
			de__fill_runs_at(ctx, &r, i);
		window_unlink(ctx, v[i].n, v[i].i, &g->wpin[v[i].k]);
	}
	de__fill_runs_end(&r);
}

/* Unlink the files of the window's first nk directories in one inode
 * order, the rest filling its holes (g->fill), then let those nodes go;
 * the rest is the window now. */
static void flush(de_ctx *ctx, struct de__global *g, size_t nk)
{
	struct de__ino_ent *v, *f = NULL;
	struct de__peek pk = { 0 };
	size_t nv, nf = 0, k;

	/* Nothing of a directory that left the tree since it was read is
	 * removed (unlink.c de__check_place).  The window is in depth-first
	 * order, so a parent is told before its children. */
	for (k = 0; k < nk; k++)
		(void)de__check_place(ctx, g->win[k]);
	/* Without memory for the order, the unlink phase below
	 * (DE__P2_LEFT) unlinks each directory's files as listed. */
	v = window_order(g, 0, nk, &nv);
	if (g->fill)
		f = fillers(ctx, g, nk, &nf);
	/* Where the read stopped short of the windows ahead, the stack's
	 * next directories are listed for as many entries as it lacks. */
	if (g->fill && g->nstack && g->blocks && g->blocks < read_blocks(g)) {
		pk.want = (read_blocks(g) - g->blocks) *
			  (g->ents / g->blocks + 1);
		pk.max = g->ents_max / DE__PEEK_PART;
		f = de__peek(ctx, &pk, g->stack, g->nstack, v, nv, f, &nf);
	}
	unlink_order(ctx, g, v, nv, f, nf, &pk);
	de__peek_end(&pk);
	free(v);
	free(f);
	/* Deepest first: a directory goes as soon as its last child does,
	 * the window's pin on it handed over. */
	for (k = nk; k-- > 0;)
		de__unlink_phase(ctx, g->win[k], de__pin_move(&g->wpin[k]),
				 DE__P2_LEFT);
	memmove(g->win, g->win + nk, (g->nwin - nk) * sizeof(*g->win));
	memmove(g->wpin, g->wpin + nk, (g->nwin - nk) * sizeof(*g->wpin));
	g->nwin -= nk;
	g->ents = 0;
	g->blocks = 0;
	for (k = 0; k < g->nwin; k++) {
		g->ents += g->win[k]->ls.nents;
		g->blocks += dir_blocks(g->win[k]);
	}
}

/* See internal.h. */
void de__global_start(de_ctx *ctx, struct de__global *g, struct de__node *root,
		      int probe)
{
	struct de__pin none = DE__NO_PIN;

	memset(g, 0, sizeof(*g));
	g->probing = probe;
	g->dev = root->dev;
	g->ents_max = ctx->global_ents ? ctx->global_ents : DE__WIN_ENTS;
	g->dirs_max = ctx->fd_budget > 4 ? (size_t)ctx->fd_budget / 2 : 2;
	g->blocks_max = ctx->run.plan.win_blocks;
	g->fill = de__want_fill(ctx);
	de__ahead_start(ctx, g);
	if (root->ls.nents && root->ls.ents[0].child &&
	    root->ls.ents[0].child->fl.base) {
		size_t k;

		/* de_remove_sets(): the root holds the sets' directories,
		 * given, not read; the first one's targets come first. */
		for (k = root->ls.nents; k-- > 0;)
			descend(ctx, g, root->ls.ents[k].child);
	} else {
		descend(ctx, g, root);
	}
	if (win_add(g, root, &none) == 0)
		g->ents = root->ls.nents;
	else if (de__ordered(ctx))
		g->probing = 0;	/* no hand-over without the whole window */
	else
		de__unlink_phase(ctx, root, DE__NO_PIN, DE__P2_LEFT);
}

/*
 * The reads were fast: hand the window and the unread rest of the tree
 * to the pool.  The window's nodes have their children made; those and
 * the stack's nodes are scheduled as phase 2 schedules them, and the
 * window's files are unlinked by phase 2 (n->fl.early: not made again).
 * In an ordered run, a directory of the window that was not entered is
 * finished here; in one with a limit, the serial walk takes the tree
 * (walk.c de__batch_start), and schedules the children the window made
 * (sched.c de__prepare_serial).
 */
static void hand_over(de_ctx *ctx, struct de__global *g)
{
	struct de__node *mine = NULL, *last;
	size_t k;

	unpin_window(ctx, g);
	de__plan_hand_over(ctx);
	if (de__serial(ctx)) {
		/* The walk leaves what the reader entered and did not. */
		for (k = 0; k < g->nwin; k++)
			g->win[k]->fl.early = 1;
		g->nstack = g->nwin = 0;
		return;
	}

	/*
	 * A huge directory read last is this thread's to unlink, as a
	 * directory task the calling thread runs (sched.c de__task): its
	 * listing is still in this CPU's cache.  A worker taking it was
	 * slower (bench/results/2026-12-06/against-history.md).  So is the
	 * only directory of a call with nothing left to read (rsync calls once
	 * per directory of a sync): this thread would only wait for the
	 * worker it woke.  Smaller ones go to the pool like the rest.
	 */
	last = g->nwin ? g->win[g->nwin - 1] : NULL;
	if (last && !last->fl.skip_scan &&
	    (last->ls.nents > DE__PROBE_ENTS_MAX || (g->nwin == 1 && !g->nstack)))
		mine = g->win[--g->nwin];
	for (k = g->nstack; k-- > 0;)
		if (!marked(g->stack[k]))
			de__schedule(ctx, g->stack[k]);
	/*
	 * The window's files go ahead of the directories, in window order.
	 * Behind them, each worker would push a directory's children in
	 * front (LIFO) and never reach them until the end of the run,
	 * holding their fds, and the queue would look wide to the phase-2
	 * gate all along: a chain would be unlinked by two threads and
	 * never read ahead (sched.c run_phase2).
	 */
	for (k = g->nwin; k-- > 0;) {
		struct de__node *n = g->win[k];

		if (n->fl.skip_scan) {
			de__unlink_phase(ctx, n, DE__NO_PIN, DE__P2_NOW);
			continue;
		}
		n->fl.early = 1;
		de__unlink_phase(ctx, n, DE__NO_PIN, DE__P2_POOL);
	}
	g->nstack = g->nwin = 0;
	if (mine) {
		mine->fl.early = 1;
		de__unlink_phase(ctx, mine, DE__NO_PIN, DE__P2_NOW);
	}
}

/* Time one scan for the probe; decide once there are enough. */
static void probe(struct de__global *g, const struct de__node *n, uint64_t ns)
{
	if (n->fl.skip_scan || n->ls.nents > DE__PROBE_ENTS_MAX)
		return;
	g->probe_ns[g->nprobe++] = ns;
	if (g->nprobe == DE__PROBE_DIRS)
		g->probing = 0 - !de__slow_reads(g->probe_ns, g->nprobe);
}

/* Read n, from the stack, into the window (batch: for the batch walk). */
static void read_one(de_ctx *ctx, struct de__global *g, struct de__node *n,
		     int batch)
{
	uint64_t t0 = g->probing ? de__now_ns() : 0;
	struct de__pin pin;

	de__node_running(ctx, n);
	pin = de__scan(ctx, n, ctx->caller_buf, !batch);
	if (g->probing)
		probe(g, n, de__now_ns() - t0);
	ctx->run.rep.tick(ctx);
	if (batch && n->fl.skip_scan) {
		/* Listed in the window for hand_over(). */
		if (win_add(g, n, &pin) < 0)
			g->probing = 0;
		return;
	}
	if (n->fl.skip_scan || de__cancelled(ctx)) {
		/* Not entered (a mount point, a failed open) or cancelled:
		 * finished at once. */
		de__unlink_phase(ctx, n, pin, DE__P2_NOW);
		return;
	}
	/* The enter_dir hook decides which children are made.  The reads
	 * go in the walk's order, so the hooks are called in it, ahead of
	 * the removals (DE_F_HOOKS_AHEAD). */
	if (batch && ctx->run.plan.dir_hooks)
		de__enter_dir(ctx, n);
	descend(ctx, g, n);
	if (win_add(g, n, &pin) < 0) {
		if (batch)
			g->probing = 0;
		else
			de__unlink_phase(ctx, n, pin, DE__P2_LEFT);
		return;
	}
	g->ents += n->ls.nents;
	g->blocks += dir_blocks(n);
}

/*
 * Read directories from the stack into the window, depth first, until
 * one of its bounds, the end of the tree or the probe's decision.  For
 * the batch walk (an ordered run) the reads keep no pins, as the batch
 * pins what it unlinks from (de__batch_unlink), and a directory not
 * entered is left to the walk, which removes it in its turn.
 */
static void read_window(de_ctx *ctx, struct de__global *g)
{
	int batch = de__ordered(ctx);

	for (;;) {
		leave_read(ctx, g);
		if (!(g->nstack && g->ents < g->ents_max &&
		      g->nwin < g->dirs_max &&
		      g->blocks < read_blocks(g) &&
		      g->probing >= 0 && !(batch && de__cancelled(ctx))))
			break;
		if (!g->ahead)
			de__ahead(ctx, g, read_blocks(g));
		if (g->ahead)
			g->ahead--;
		read_one(ctx, g, g->stack[--g->nstack], batch);
	}
	/* A window full, or a tree read whole, before the probe decided:
	 * what was timed decides (nothing timed: fast, as before). */
	if (g->probing > 0)
		g->probing = 0 - !de__slow_reads(g->probe_ns, g->nprobe);
	/* What enough reads told stands for the calls after (rsync's
	 * scattered deletions in a sync: de_remove_sets()). */
	if (g->probing <= 0 && g->nprobe == DE__PROBE_DIRS && !g->told) {
		de__set_slow(ctx, g->dev, g->probing == 0);
		g->told = 1;
	}
}

/* See internal.h. */
void de__global_end(struct de__global *g)
{
	de__ahead_end(g);
	free(g->stack);
	free(g->win);
	free(g->wpin);
	g->stack = NULL;
	g->win = NULL;
	g->wpin = NULL;
	g->nstack = g->nwin = 0;
}

/* See internal.h. */
int de__global_step(de_ctx *ctx, struct de__global *g)
{
	/* Cancelled: every node left is finished here, as skipped. */
	if (de__cancelled(ctx))
		g->probing = 0;
	read_window(ctx, g);
	if (g->probing < 0) {
		hand_over(ctx, g);
	} else if (g->nwin) {
		/* Filling, the window's rest waits for the next read; at the
		 * end of the tree, or cancelled, it goes part by part. */
		do
			flush(ctx, g, g->fill ? first_part(g) : g->nwin);
		while (g->nwin && !(g->nstack && !de__cancelled(ctx)));
		if (g->nstack || g->nwin)
			return 1;
	}
	de__global_end(g);
	return 0;
}

/* See internal.h. */
int de__global_read(de_ctx *ctx, struct de__global *g)
{
	read_window(ctx, g);
	if (g->probing < 0) {
		hand_over(ctx, g);
		de__global_end(g);
		return -1;
	}
	/* The walk takes what was read; the next window starts empty. */
	g->nwin = g->ents = g->blocks = 0;
	return 0;
}

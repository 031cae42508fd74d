/*
 * global.h - the global schedule's windows (global.c), the batch walk's
 * batches (batch.c), and the filling of the holes of their inode orders
 * (order.c).  Private to the engine (internal.h includes it after the
 * types it uses).
 */
#ifndef DE_GLOBAL_H
#define DE_GLOBAL_H

/* global.c: the calling thread reads a window of the tree, then unlinks
 * its files in one inode order.  start takes the root (targets added),
 * each step does one window and returns 0 when the tree is done. */
struct de__global {
	struct de__node **stack, **win;
	struct de__pin *wpin;		/* the window's pin of win[k], if any */
	size_t nstack, stack_cap, nwin, win_cap;
	size_t ents, blocks;		/* what the window holds */
	size_t ents_max, dirs_max, blocks_max;
	/* DE_SCHED_AUTO: 1 while timing the first directories' reads
	 * (global.c probe), 0 when it stays, -1 to hand over to the pool. */
	int probing;
	unsigned nprobe;
	uint64_t probe_ns[DE__PROBE_DIRS];
	dev_t dev;			/* the root's */
	int fill;			/* de__fill_runs_at(): the window is read
					 * on where its bounds leave room, and
					 * its first part unlinked, the rest
					 * filling */
	int told;			/* the verdict went to de__set_slow() */
	int bdev;			/* dirahead.c's, or -1 */
	size_t ahead;			/* directories it asked for not read */
};
void de__global_start(de_ctx *ctx, struct de__global *g,
		      struct de__node *root, int probe);
int de__global_step(de_ctx *ctx, struct de__global *g);
/* The batch walk (run.c, an ordered run): read the next window, without
 * unlinking; -1 when the probe handed the tree over (the first call
 * only), and g is then ended. */
int de__global_read(de_ctx *ctx, struct de__global *g);
void de__global_end(struct de__global *g);

/* dirahead.c: where g fills, the root's block device is opened
 * (de__ahead_start), and the stack's next directories are asked of its
 * cache (de__ahead: as many blocks as the window lacks of upto, a
 * window's at least; g->ahead of them) when those asked before are
 * read. */
void de__ahead_start(de_ctx *ctx, struct de__global *g);
void de__ahead(de_ctx *ctx, struct de__global *g, size_t upto);
void de__ahead_end(struct de__global *g);
/* dirahead.c: the block device node of dev, opened read-only, or -1. */
int de__open_bdev(dev_t dev);
/* push.c: where the holes are filled, or an ordered run's batches go
 * on the same disks (de__want_push), a thread asks for the write-back of
 * the inode tables of the root's file system every DE__PUSH_MS (tried
 * once a call, from its first such order of at least DE__PUSH_MIN_FILES
 * files) until the call ends (run.c end_run). */
void de__push_start(de_ctx *ctx, size_t files);
/* policy.c: whether a run has push.c start (de__want_fill too). */
int de__want_push(const de_ctx *ctx);
void de__push_end(de_ctx *ctx);
/* policy.c: whether de_dir_ahead() asks for a directory on fstype, dev. */
int de__want_dir_ahead(const de_ctx *ctx, long fstype, dev_t dev);
/* Whether n's listing is the caller's (the root's targets, a set's), not
 * read by the engine. */
static inline int de__given_listing(const struct de__node *n)
{
	return !n->parent || n->fl.base;
}
/* order.c: the bytes of n's entries, the names' room in its blocks. */
size_t de__listing_bytes(const struct de__node *n);
/* order.c: the bytes of entries a run of the inode order of the
 * listings n[0..k) takes where they are huge: the plan's chunk (policy.c
 * de__chunk_blocks), half of it where holes are filled and a listing the
 * caller gave is among them, alone or over half a chunk itself (rsync's
 * read of a huge directory, its subdirectories read with it), as rsync
 * hands one over (2026-12-07/NOTES.md, "The seeds' directory in
 * pieces").  The one rule for de__inode_order(), the global window's
 * order and, before the run, de_order_targets(). */
size_t de__run_bytes(struct de__node *const *n, size_t k);
/* policy.c: whether a run on dev would fill (de__want_fill), as far as
 * dev and the context tell before it is planned: de_order_cut(). */
int de__would_fill(de_ctx *ctx, dev_t dev);

/*
 * batch.c: the batch walk's batch: entries the walk reached, in
 * canonical order, each entry i of directory n (a subdirectory's entry
 * stands for its rmdir), grouped in runs of one directory.  Bounded by the window's
 * entries and directories (runs_max: each run pins its directory while
 * the batch is unlinked).  carry: the last run's directory, held pinned
 * for the next batch's first (batch.c pin_runs).
 */
struct de__bitem {
	struct de__node *n;
	uint32_t i, run;
};
struct de__brun {
	struct de__node *n;
	int fd;				/* pinned, or a negative errno */
};
struct de__batch {
	struct de__bitem *v;
	size_t nv, vcap;
	struct de__brun *runs;
	size_t nruns, rcap;
	size_t ndirs;			/* entries of v that are directories */
	size_t ents_max, runs_max;
	struct de__node *carry;
	int carry_fd;
};
void de__batch_init(struct de__batch *b, const struct de__global *g);
int de__batch_add(struct de__batch *b, struct de__node *n, size_t i);
int de__batch_full(const struct de__batch *b);
/* Removes file e of n through n's pinned fd (sets e's result); returns
 * whether n keeps something. */
typedef int (*de__file_fn)(de_ctx *ctx, struct de__node *n, int fd,
			   struct de__ent *e);
/* Pin the batch's directories and remove its files with fn in one inode
 * order, unless that could pass the limit; the walk then makes the rest
 * of the removals, and every report, in canonical order, and calls
 * de__batch_done(). */
void de__batch_unlink(de_ctx *ctx, struct de__batch *b, de__file_fn fn);
void de__batch_done(struct de__batch *b);
void de__batch_free(de_ctx *ctx, struct de__batch *b);

/*
 * order.c: filling the holes of an order cut into runs, each ascending
 * by inode (global.c, "Filling the holes", says why): the window's order
 * or a huge directory's.  The caller describes the order (n entries; ino(), the
 * inode of entry i; filler(), entry i as a filler into *f if it is a
 * regular file that can be touched; touch(), which touches one) and what
 * fills after the last run (after, by inode; none: NULL), and calls
 * de__fill_runs_at() for each entry i, in order, before unlinking it:
 * the inode-table blocks it skips since the entry before are filled from
 * the files of the DE__FILL_AHEAD runs after its own, and where those
 * reach the end, from after.  de__fill_runs_end() frees what it held.
 */
struct de__fill_runs {
	size_t n;
	uint64_t (*ino)(const void *arg, size_t i);
	int (*filler)(const void *arg, size_t i, struct de__ino_ent *f);
	int (*touch)(de_ctx *ctx, const void *arg,
		     const struct de__ino_ent *f);
	const void *arg;
	const struct de__ino_ent *after;
	size_t nafter;
	/* Kept by de__fill_runs_at(): the end of the run entry i is in, of
	 * the next run and of the runs that fill, their fillers (NULL
	 * without memory: that run fills nothing), and the inode of the
	 * entry before. */
	size_t end, next, upto;
	struct de__ino_ent *f;
	size_t nf;
	uint64_t prev;
};
void de__fill_runs_at(de_ctx *ctx, struct de__fill_runs *r, size_t i);
void de__fill_runs_end(struct de__fill_runs *r);
/* Touch f, file f->i of the listing of f->n, through fd, n's. */
int de__touch_listed(de_ctx *ctx, int fd, const struct de__ino_ent *f);

/*
 * peek.c: fillers from the directories next on the stack, not read into
 * the window (peek.c says when and why).  de__peek() takes the window's
 * order v, the fillers f its rest gives, and the stack (the reader's:
 * the last entry is read next; one with its low bit set is a leave mark,
 * global.c's, not a directory), and lists directories from its top for
 * the holes f leaves until p->want entries were listed, p->max fillers
 * found or no hole is left (the caller sets both, the rest zero).
 * It returns f, of its own fillers only the first of each hole (*nf),
 * with what it found, by inode: each a filler with k DE__PEEKED (n the
 * directory, i its name in p->names) for de__peek_touch().
 * de__peek_end() frees what p holds.
 */
#define DE__PEEKED	UINT32_MAX
/* de__given(): the fillers f (*nf of them) and, where root is not NULL,
 * the call's de_opts.fill's files, each with k DE__GIVEN (n the root, i
 * its index there), all by inode, for the order's last runs: f grown,
 * or f as it was (sorted) without memory; de__touch_given() touches one
 * through fd, the root's (-1: the root pinned for it). */
#define DE__GIVEN	(UINT32_MAX - 1)
struct de__ino_ent *de__given(de_ctx *ctx, struct de__node *root,
			      struct de__ino_ent *f, size_t *nf);
int de__touch_given(de_ctx *ctx, int fd, const struct de__ino_ent *f);
struct de__peek {
	size_t want, max;
	uint8_t *holes;			/* a bit a block, from b0 */
	uint64_t b0, nb;
	size_t left;			/* holes not filled yet */
	struct de__ino_ent *f;
	size_t nf, fcap;
	char *names;
	size_t nlen, ncap;
	size_t ents;			/* entries listed */
	struct de__node *dir;		/* the directory being listed */
};
struct de__ino_ent *de__peek(de_ctx *ctx, struct de__peek *p,
			     struct de__node *const *stack, size_t nstack,
			     const struct de__ino_ent *v, size_t nv,
			     struct de__ino_ent *f, size_t *nf);
int de__peek_touch(de_ctx *ctx, const struct de__peek *p,
		   const struct de__ino_ent *f);
void de__peek_end(struct de__peek *p);

#endif /* DE_GLOBAL_H */

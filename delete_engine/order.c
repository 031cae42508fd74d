/*
 * order.c - canonical order, inode order and per-filesystem heuristics.
 *
 * Canonical order is the order stock rsync deletes in: inside a directory,
 * the reverse of rsync's sort (protocol >= 29 sorts non-directories first,
 * then directories, each by unsigned bytes), so: directories in descending
 * name order, then non-directories in descending name order.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define FS_TMPFS	0x01021994L
#define FS_RAMFS	0x858458f6L
#define FS_NFS		0x6969L
#define FS_SMB2		0xfe534d42L
#define FS_CIFS		0xff534d42L
#define FS_LUSTRE	0x0bd00bd0L
#define FS_XFS		0x58465342L
#define FS_EXT4		0xef53L
#define FS_BTRFS	0x9123683eL
#define FS_FUSE		0x65735546L
#define FS_SMB		0x517bL
#define FS_9P		0x01021997L
#define FS_CEPH		0x00c36400L
#define FS_OVERLAY	0x794c7630L
#define FS_AFS		0x5346414fL
#define FS_GFS2		0x01161970L
#define FS_OCFS2	0x7461636fL

struct sortarg {
	struct de__node *n;
	int (*cmp)(const char *, int, const char *, int);
	int plain;
};

static int cmp_canon(const void *a, const void *b, void *arg)
{
	const struct sortarg *s = arg;
	const struct de__ent *x = a, *y = b;
	const char *xn = s->n->arena + x->name, *yn = s->n->arena + y->name;
	int xd = x->type == DE_T_DIR, yd = y->type == DE_T_DIR;

	/* Descending rsync order, so compare y against x. */
	if (s->cmp)
		return s->cmp(yn, yd, xn, xd);
	if (!s->plain && xd != yd)
		return yd - xd;		/* dirs first */
	return strcmp(yn, xn);		/* glibc strcmp is unsigned */
}

/* Sort n's listing into canonical order. */
void de__sort_canonical(de_ctx *ctx, struct de__node *n)
{
	struct sortarg s = { n, ctx->hooks->compare,
			     !!(ctx->cfg.flags & DE_F_PLAIN_ORDER) };

	if (n->nents > 1)
		qsort_r(n->ents, n->nents, sizeof(*n->ents), cmp_canon, &s);
}

static int cmp_ino(const void *a, const void *b, void *arg)
{
	const struct de__node *n = arg;
	uint64_t x = n->ents[*(const uint32_t *)a].ino;
	uint64_t y = n->ents[*(const uint32_t *)b].ino;

	return x < y ? -1 : x > y;
}

/*
 * Whether readdir's d_ino is the inode number fstat() reports, so that a
 * directory's d_ino in its parent's listing identifies it.  Not on FUSE
 * without inode pass-through: libfuse's high-level API lists every entry
 * as FUSE_UNKNOWN_INO (0xffffffff) and stats it as its node id (sshfs
 * without -o use_ino; issue 19: rsync-de deleted nothing there), and no
 * statfs field tells bindfs, which passes them through, from the rest.
 * Nor on CIFS with noserverino (the client numbers readdir and stat
 * apart) or overlayfs without xino (the layer's d_ino).  NFS, 9p, Lustre
 * and CephFS list the numbers stat gives, and keep the d_ino check, which
 * also tells a same-device bind mount (tree.c de__scan).  So does the
 * portable build, which knows no f_type (0): there the check is the only
 * catch of such a mount, and sshfs directories are refused instead.
 */
int de__dino_is_stat(long fstype)
{
	switch (fstype) {
	case FS_FUSE: case FS_OVERLAY: case FS_SMB: case FS_SMB2: case FS_CIFS:
		return 0;
	}
	return 1;
}

/*
 * A heuristic's answer, guess, unless the caller forced it with a flag:
 * 0 under off, 1 under on (off wins where both are set).
 */
static int forced(const de_ctx *ctx, unsigned off, unsigned on, int guess)
{
	if (ctx->cfg.flags & off)
		return 0;
	if (ctx->cfg.flags & on)
		return 1;
	return guess;
}

/*
 * Whether to unlink in inode order on this filesystem.
 *
 * Measured (docs/BENCHMARKS.md, "Engine heuristics"): on ext4 a 200k-file
 * directory unlinked in inode order instead of hash (readdir) order takes
 * less time, because the inode table and bitmaps are then touched
 * sequentially (on a throttled slow disk the order changes only when the
 * writes happen, not how many: "A slow disk").  On tmpfs there is no on-disk layout and the
 * sort is pure overhead; gnulib fts skips it on
 * tmpfs, NFS, CIFS and Lustre (bug#80106: the sort defeated Lustre's
 * statahead, about 9x slower), and so do we.  Nor on FUSE, 9p or CephFS:
 * every unlink there is a round trip to a server with a layout of its own,
 * and on FUSE d_ino is often meaningless (de__dino_is_stat: sshfs lists
 * every entry as 0xffffffff).
 */
int de__want_inode_sort(de_ctx *ctx, long fstype)
{
	int pays = 1;

	switch (fstype) {
	case FS_TMPFS: case FS_RAMFS: case FS_NFS: case FS_SMB: case FS_SMB2:
	case FS_CIFS: case FS_LUSTRE: case FS_FUSE: case FS_9P: case FS_CEPH:
		pays = 0;
	}
	return forced(ctx, DE_F_NO_INODE_SORT, DE_F_INODE_SORT, pays);
}

static int cmp_target_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct de_target *)a)->ino;
	uint64_t y = ((const struct de_target *)b)->ino;

	return x < y ? -1 : x > y;
}

/* See delete_engine.h. */
int de_order_targets(de_ctx *ctx, int dirfd, struct de_target *t, size_t n)
{
	size_t k, w = n;
	long fstype;

	if (!ctx || dirfd < 0 || (n && !t))
		return -EINVAL;
	/*
	 * Directories to the end, keeping their order: scanning down, each
	 * takes the highest slot not yet taken by one, and what it displaces
	 * is a non-directory (whose order the sort below decides).
	 */
	for (k = n; k-- > 0;)
		if (t[k].type == DE_T_DIR) {
			struct de_target d = t[k];

			t[k] = t[--w];
			t[w] = d;
		}
	/* A serial run (btrfs) sorts each call's listing canonically. */
	fstype = de__fs_type(dirfd);
	if (w > 1 && de__want_inode_sort(ctx, fstype) &&
	    !de__want_serial(ctx, fstype))
		qsort(t, w, sizeof(*t), cmp_target_ino);
	return 0;
}

/*
 * Index array of n's non-directory entries to delete, in the order to
 * unlink them (inode order where wanted).  Returns NULL on ENOMEM (the
 * caller then walks the listing directly); *count set.
 */
uint32_t *de__inode_order(struct de__node *n, size_t *count)
{
	uint32_t *idx = malloc((n->nents ? n->nents : 1) * sizeof(*idx));
	size_t i, k = 0;

	*count = 0;
	if (!idx)
		return NULL;
	for (i = 0; i < n->nents; i++)
		if (n->ents[i].type != DE_T_DIR &&
		    n->ents[i].action == DE_A_DELETE && !n->ents[i].done)
			idx[k++] = (uint32_t)i;
	if (k > 1 && de__want_inode_sort(n->ctx, n->fstype))
		qsort_r(idx, k, sizeof(*idx), cmp_ino, n);
	*count = k;
	return idx;
}

/*
 * Whether fstype is latency-bound: a network or FUSE file system, where
 * each unlink is a round trip to a server (or a userspace daemon) and the
 * client's CPU sits idle in between.  There the run needs many requests in
 * flight, not cores (de__threads_for()), but not inside one directory:
 * the VFS holds a directory's lock across each unlink's round trip, so a
 * directory's unlinks are not split (de__want_split()).  GlusterFS and
 * most object stores (rclone, s3fs, gcsfuse) are FUSE; Lustre's and
 * CephFS's kernel clients have their own magic.
 */
int de__latency_bound(long fstype)
{
	switch (fstype) {
	case FS_FUSE: case FS_NFS: case FS_SMB: case FS_SMB2: case FS_CIFS:
	case FS_9P: case FS_LUSTRE: case FS_CEPH: case FS_AFS: case FS_GFS2:
	case FS_OCFS2:
		return 1;
	}
	return 0;
}

/*
 * DE_SCHED_AUTO: whether the first directories read (n of them, each
 * open and read taking ns[i]) came off a disk where requests are the
 * cost, so that the global schedule pays (global.c).  Their median above
 * 2 ms: a cold directory on a rotating disk takes 7-16 ms, on a volume
 * capped at 400 operations a second 7.5 ms (three requests), on this
 * project's virtio disk 0.2-0.8 ms, and from the cache 0.1 ms
 * (docs/BENCHMARKS.md, "Slow disks").  Warm caches on a slow disk read
 * fast and stay directory by directory.
 */
int de__slow_reads(const uint64_t *ns, unsigned n)
{
	uint64_t v[DE__PROBE_DIRS];
	unsigned i, j;

	if (!n || n > DE__PROBE_DIRS)
		return 0;
	for (i = 0; i < n; i++) {
		uint64_t x = ns[i];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return v[n / 2] > 2000000u;
}

/*
 * Whether to split one huge directory's unlinks across workers.
 *
 * Only on tmpfs and ramfs (measured: docs/BENCHMARKS.md, "Engine
 * heuristics").  All unlinks in one directory serialize on the
 * directory's i_rwsem, and on xfs
 * also on the AGI buffer of the one allocation group holding the inodes,
 * so a second worker only adds lock hand-offs; on tmpfs freeing the inode
 * after the name is gone is a large enough share of the work to overlap.
 */
int de__want_split(de_ctx *ctx, long fstype)
{
	return forced(ctx, DE_F_NO_SPLIT, DE_F_SPLIT,
		      fstype == FS_TMPFS || fstype == FS_RAMFS);
}

/*
 * Worker threads for a run whose start directory is on fstype, when the
 * caller did not set threads (docs/BENCHMARKS.md, "Engine heuristics").
 */
unsigned de__threads_for(de_ctx *ctx, long fstype)
{
	/* The best of 2, 8, 16 and 32 on sshfs (docs/BENCHMARKS.md,
	 * "sshfs"). */
	if (de__latency_bound(fstype))
		return DE__LAT_THREADS;
	return ctx->nthreads;
}

/*
 * Phase-2 admission gate (tree.c run_phase2): how many directory tasks
 * must be queued before a second thread may unlink at the same time as
 * another; below that, extra workers only read directories ahead.
 * 0: no gate (every worker unlinks whatever it scanned).
 *
 * Why 2: in a narrow tree (a parent and its child) a second unlinker makes
 * xfs, btrfs and ext4 slower than one, as part of each unlink runs in
 * kernel threads (xfs inode GC, btrfs delayed items, jbd2) that the
 * second CPU is better left to, beside one worker reading ahead.  Wide
 * trees pass the gate and keep every worker unlinking.  tmpfs has no such
 * kernel work, and on a latency-bound file system the work is a server's:
 * no gate there.  btrfs keeps one unlinker even in wide trees, through
 * de__want_serial.  Measurements: docs/BENCHMARKS.md, "Engine
 * heuristics".
 */
unsigned de__p2_gate(de_ctx *ctx, long fstype)
{
	/* No kernel threads to leave a CPU to on tmpfs, nor where the work
	 * is a server's. */
	int gate = fstype != FS_TMPFS && fstype != FS_RAMFS &&
		   !de__latency_bound(fstype);

	return forced(ctx, DE_F_NO_ADAPT, DE_F_ADAPT, gate) ? 2 : 0;
}

/*
 * Whether a run removes on the calling thread in canonical order, the
 * workers only reading ahead (run.c, as for a dry run): 1 on btrfs, where
 * one unlinker is all that pays (see de__p2_gate) and its order matters.
 * btrfs queues each removed directory entry as a delayed item of the
 * directory's inode and hands batches of them to its delayed-meta
 * workers, which contend with the unlinker for the b-tree's root lock;
 * items of a directory removed soon after are dropped unwritten.  The
 * parallel schedule empties a directory long before its rmdir, so items
 * pile up; the canonical walk empties each one just before (post-order).
 * Measurements: docs/BENCHMARKS.md, "Engine heuristics".  DE_F_NO_ADAPT
 * and DE_F_ADAPT (measuring the parallel schedule) turn it off.
 */
int de__want_serial(de_ctx *ctx, long fstype)
{
	if (ctx->cfg.flags & (DE_F_NO_ADAPT | DE_F_ADAPT))
		return 0;
	return fstype == FS_BTRFS;
}

/*
 * Whether a reader that is a full ready queue ahead of the unlinker on a
 * narrow tree (tree.c run_phase2) unlinks the directory it just read
 * itself rather than wait: 1 on ext4 only, where the reader otherwise
 * spends most of the run waiting for the one unlinker.  Not on xfs (a
 * second unlinker there is what the gate is for) nor btrfs (serial).
 * Measurements: docs/BENCHMARKS.md, "Engine heuristics".
 */
int de__p2_help(de_ctx *ctx, long fstype)
{
	if (ctx->cfg.flags & DE_F_NO_ADAPT)
		return 0;
	return fstype == FS_EXT4;
}

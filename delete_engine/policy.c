/*
 * policy.c - what the engine does where: per file system and device, the
 * schedule (serial, parallel or global), the workers, and when to sort,
 * split or gate.  Each rule says why, and docs/BENCHMARKS.md has the
 * measurements behind it.  de__plan() makes the choice for a run; the
 * rest answer the questions the scan and the schedules ask as they go.
 */
#include "internal.h"

#include <stdio.h>

/*
 * What the engine knows of each file system, by statfs f_type: one row
 * each, the reasons in the functions below that read the columns.
 *   dino_stat  readdir's d_ino is stat's inode number (de__dino_is_stat)
 *   dino_layer a d_ino that differs may be a lower layer's
 *              (de__dino_from_layer)
 *   sort       unlinking in inode order pays (de__want_inode_sort)
 *   latency    every request waits for a server (latency_bound)
 *   split      one huge directory's unlinks are split (de__want_split)
 *   gate       phase 2 is gated in a narrow tree (p2_gate)
 *   serial     the calling thread removes, in canonical order
 *              (want_serial)
 *   help       a reader far ahead unlinks what it read (p2_help)
 *   dirra      a listing is read ahead through the block device
 *              (de__want_dir_ahead)
 * A file system not listed (and the portable build's 0) takes the last
 * row: a local disk file system.
 */
struct fs_policy {
	long magic;
	const char *name;
	unsigned char dino_stat, dino_layer, sort, latency, split, gate,
		      serial, help, dirra;
};

static const struct fs_policy fs_policy[] = {
	/* magic	name	   dino layer sort lat split gate ser help ra */
	{ 0xef53L,	"ext4",		1, 0, 1, 0, 0, 1, 0, 1, 1 },
	{ 0x58465342L,	"xfs",		1, 0, 1, 0, 0, 1, 0, 0, 0 },
	{ 0x9123683eL,	"btrfs",	1, 0, 1, 0, 0, 1, 1, 0, 0 },
	{ 0x01021994L,	"tmpfs",	1, 0, 0, 0, 1, 0, 0, 0, 0 },
	{ 0x858458f6L,	"ramfs",	1, 0, 0, 0, 1, 0, 0, 0, 0 },
	{ 0x794c7630L,	"overlayfs",	0, 1, 1, 0, 0, 1, 0, 0, 0 },
	{ 0x6969L,	"nfs",		1, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0x517bL,	"smb",		0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0xfe534d42L,	"smb2",		0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0xff534d42L,	"cifs",		0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0x65735546L,	"fuse",		0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0x01021997L,	"9p",		1, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0x0bd00bd0L,	"lustre",	1, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0x00c36400L,	"ceph",		1, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ 0x5346414fL,	"afs",		1, 0, 1, 1, 0, 0, 0, 0, 0 },
	{ 0x01161970L,	"gfs2",		1, 0, 1, 1, 0, 0, 0, 0, 0 },
	{ 0x7461636fL,	"ocfs2",	1, 0, 1, 1, 0, 0, 0, 0, 0 },
	{ 0,		"other",	1, 0, 1, 0, 0, 1, 0, 0, 0 },
};

/* fstype's row (the last one for a file system not listed). */
static const struct fs_policy *fs_of(long fstype)
{
	size_t i;

	for (i = 0; fs_policy[i].magic && fs_policy[i].magic != fstype; i++)
		;
	return &fs_policy[i];
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
 * also tells a same-device bind mount (scan.c de__scan_node).  So does the
 * portable build, which knows no f_type (0): there the check is the only
 * catch of such a mount, and sshfs directories are refused instead.
 */
int de__dino_is_stat(long fstype)
{
	return fs_of(fstype)->dino_stat;
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
 * sequentially.  On tmpfs there is no on-disk layout and the sort is pure
 * overhead; gnulib fts skips it on tmpfs, NFS, CIFS and Lustre (bug#80106:
 * the sort defeated Lustre's statahead), and so do we.  Nor on FUSE, 9p
 * or CephFS: every unlink there is a round trip to a server with a layout
 * of its own, and on FUSE d_ino is often meaningless (de__dino_is_stat:
 * sshfs lists every entry as 0xffffffff).
 */
int de__want_inode_sort(de_ctx *ctx, long fstype)
{
	return forced(ctx, DE_F_NO_INODE_SORT, DE_F_INODE_SORT,
		      fs_of(fstype)->sort);
}

/*
 * Whether a d_ino that differs from stat's may only be the lower layer's:
 * overlayfs without xino lists the layer's inode numbers, so there a
 * differing d_ino does not tell a bind mount (scan.c de__scan_node).
 */
int de__dino_from_layer(long fstype)
{
	return fs_of(fstype)->dino_layer;
}

/*
 * Whether fstype is latency-bound: a network or FUSE file system, where
 * each unlink is a round trip to a server (or a userspace daemon) and the
 * client's CPU sits idle in between.  There the run needs many requests in
 * flight, not cores (threads_for()), but not inside one directory:
 * the VFS holds a directory's lock across each unlink's round trip, so a
 * directory's unlinks are not split (de__want_split()).  GlusterFS and
 * most object stores (rclone, s3fs, gcsfuse) are FUSE; Lustre's and
 * CephFS's kernel clients have their own magic.
 */
static int latency_bound(long fstype)
{
	return fs_of(fstype)->latency;
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
	return v[n / 2] > DE__SLOW_READ_NS;
}

/*
 * Count one read of a directory of nents entries on device dev, which
 * took ns (global.c's probe, or de_note_read()): the first DE__PROBE_DIRS
 * small enough decide the device's verdict by de__slow_reads(), kept
 * for the calls after.  Returns the verdict (de__dev_slow()).
 */
int de__note_read(de_ctx *ctx, dev_t dev, uint64_t ns, size_t nents)
{
	if (!ctx->read_known || ctx->read_dev != dev) {
		ctx->read_known = 1;
		ctx->read_dev = dev;
		ctx->nread = 0;
		ctx->read_slow = -1;
	}
	if (ctx->read_slow < 0 && ns && nents <= DE__PROBE_ENTS_MAX) {
		ctx->read_ns[ctx->nread++] = ns;
		if (ctx->nread == DE__PROBE_DIRS)
			ctx->read_slow = de__slow_reads(ctx->read_ns,
							ctx->nread);
	}
	return ctx->read_slow;
}

/* A run's probe decided for device dev (global.c): the verdict stands
 * for the calls after. */
void de__set_slow(de_ctx *ctx, dev_t dev, int slow)
{
	ctx->read_known = 1;
	ctx->read_dev = dev;
	ctx->nread = 0;
	ctx->read_slow = slow;
}

/* 1 when dev's reads told a slow disk, 0 a fast one, -1 not yet. */
int de__dev_slow(const de_ctx *ctx, dev_t dev)
{
	return ctx->read_known && ctx->read_dev == dev ? ctx->read_slow : -1;
}

/* See delete_engine.h. */
int de_note_read(de_ctx *ctx, int dirfd, uint64_t ns, size_t nents)
{
	struct de__st st;

	if (!ctx || de__fstat(ctx, dirfd, ".", &st))
		return -1;
	return de__note_read(ctx, st.dev, ns, nents);
}

/*
 * Whether an inode order's holes are filled (order.c de__fill_runs_at):
 * where push.c runs (below), but not in ordered runs, whose order
 * follows the walk.
 */
int de__want_fill(const de_ctx *ctx)
{
	return !de__ordered(ctx) && de__want_push(ctx);
}

/*
 * Whether push.c writes the inode tables home behind an inode order
 * (the holes filled, or an ordered run's batches: batch.c): where the
 * plan found a jbd2 journal (ext4) on a device not known to read fast (a
 * fast disk pays the touches and saves no seek: about 1.06 of the time,
 * 0.96-1.09 in four rounds, on a directory of 400,000 in runs:
 * 2026-12-06/NOTES.md), and not under DE_SCHED_DIRS, which changes
 * nothing it does not delete.  de_test_global_fill() says otherwise for
 * tests.
 */
int de__want_push(const de_ctx *ctx)
{
	if (ctx->cfg.schedule == DE_SCHED_DIRS)
		return 0;
	if (ctx->global_fill)
		return ctx->global_fill > 0;
	return ctx->jtx_blocks != 0 && de__dev_slow(ctx, ctx->jtx_dev) != 0;
}

/* See global.h. */
int de__would_fill(de_ctx *ctx, dev_t dev)
{
	if (ctx->cfg.schedule == DE_SCHED_DIRS ||
	    (ctx->cfg.flags & (DE_F_ORDERED | DE_F_DRY_RUN)))
		return 0;
	if (ctx->global_fill)
		return ctx->global_fill > 0;
	(void)de__chunk_blocks(ctx, dev);
	return ctx->jtx_blocks != 0 && de__dev_slow(ctx, dev) != 0;
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
	return forced(ctx, DE_F_NO_SPLIT, DE_F_SPLIT, fs_of(fstype)->split);
}

/*
 * Whether reading a directory also looks up one name after each batch
 * (sys.c de__read_dir): on a latency-bound file system.  An NFS client
 * asks for a listing's later pages with the entries' attributes
 * (READDIRPLUS) only once it sees names being looked up, and FUSE's
 * client copied the heuristic; without them each unlink waits for a
 * lookup first, with the directory locked.  Stock rsync gets them by
 * lstat()ing as it lists; one lookup per getdents64 call is enough
 * (docs/BENCHMARKS.md, "Network file systems").
 */
int de__want_names_ahead(long fstype)
{
	return latency_bound(fstype);
}

/* See delete_engine.h. */
int de_names_ahead(int dirfd)
{
	return de__want_names_ahead(de__fs_type(dirfd));
}

/*
 * Whether a directory listed whole on fstype and dev is first asked of
 * the block device's cache (dirahead.c de_dir_ahead): on ext4, which
 * reads an indexed directory one block a request in hash order, with no
 * read-ahead, on a device not known to read fast (on the hdd model, one
 * directory of a million files listed by rsync: 10,083 reads in 416.7 s,
 * 4,622 in 386.3 once asked; bench/results/2026-12-07/NOTES.md).
 */
int de__want_dir_ahead(const de_ctx *ctx, long fstype, dev_t dev)
{
	return fs_of(fstype)->dirra && de__dev_slow(ctx, dev) != 0;
}

/*
 * Worker threads for a run whose start directory is on fstype, when the
 * caller did not set threads (docs/BENCHMARKS.md, "Engine heuristics").
 */
static unsigned threads_for(de_ctx *ctx, long fstype)
{
	/* Enough requests in flight for a server that takes many at once.
	 * Where the client's CPU is the bound (sshfs) the runs did not
	 * separate 64 from 32 clearly (docs/BENCHMARKS.md, "Network file
	 * systems", "sshfs"). */
	if (latency_bound(fstype))
		return DE__LAT_THREADS;
	return ctx->nthreads;
}

/*
 * Phase-2 admission gate (sched.c run_phase2): how many directory tasks
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
 * want_serial.  Measurements: docs/BENCHMARKS.md, "Engine
 * heuristics".
 */
static unsigned p2_gate(de_ctx *ctx, long fstype)
{
	/* No kernel threads to leave a CPU to on tmpfs, nor where the work
	 * is a server's. */
	return forced(ctx, DE_F_NO_P2_GATE, DE_F_P2_GATE,
		      fs_of(fstype)->gate) ? DE__P2_GATE : 0;
}

/*
 * Whether a run removes on the calling thread in canonical order, the
 * workers only reading ahead (run.c, as for a dry run): 1 on btrfs, where
 * one unlinker is all that pays (see p2_gate) and its order matters.
 * btrfs queues each removed directory entry as a delayed item of the
 * directory's inode and hands batches of them to its delayed-meta
 * workers, which contend with the unlinker for the b-tree's root lock;
 * items of a directory removed soon after are dropped unwritten.  The
 * parallel schedule empties a directory long before its rmdir, so items
 * pile up; the canonical walk empties each one just before (post-order).
 * Measurements: docs/BENCHMARKS.md, "Engine heuristics".  DE_F_NO_P2_GATE
 * and DE_F_P2_GATE (measuring the parallel schedule) turn it off.
 */
static int want_serial(de_ctx *ctx, long fstype)
{
	if (ctx->cfg.flags & (DE_F_NO_P2_GATE | DE_F_P2_GATE))
		return 0;
	return fs_of(fstype)->serial;
}

/* Whether to sort a call's non-directory targets by inode: where the
 * inode order pays, and not in a serial run, which sorts each listing
 * canonically (order.c de_order_targets). */
int de__sort_targets(de_ctx *ctx, long fstype)
{
	return de__want_inode_sort(ctx, fstype) && !want_serial(ctx, fstype);
}

/*
 * Whether a reader that is a full ready queue ahead of the unlinker on a
 * narrow tree (sched.c run_phase2) unlinks the directory it just read
 * itself rather than wait: 1 on ext4 only, where the reader otherwise
 * spends most of the run waiting for the one unlinker.  Not on xfs (a
 * second unlinker there is what the gate is for) nor btrfs (serial).
 * Measurements: docs/BENCHMARKS.md, "Engine heuristics".
 */
static int p2_help(de_ctx *ctx, long fstype)
{
	if (ctx->cfg.flags & DE_F_NO_P2_GATE)
		return 0;
	return fs_of(fstype)->help;
}

/*
 * The schedule of a run (internal.h, enum de__mode), and why.  Serial,
 * and so ordered, where the file system wants it (want_serial).  Else
 * the global schedule (global.c) where it is asked for, or may pay, and
 * not by itself where every request waits for a server (latency_bound).
 * Ordered reports and a limit take the global schedule as the batch walk
 * (walk.c), which keeps the canonical order of reports and the limit's
 * exactness without the serial walk, and so do the enter_dir and dispose
 * hooks when they may run ahead of it (DE_F_HOOKS_AHEAD).  Runs that
 * decide entry by entry when its turn comes (a dry run, ask_dir, and
 * those hooks otherwise) keep the serial or ordered walk.
 */
static enum de__mode choose(de_ctx *ctx, long fstype, int sets,
			    const char **why)
{
	const struct de_hooks *h = ctx->run.hooks;
	const struct de__plan *p = &ctx->run.plan;
	unsigned f = ctx->run.flags;
	int dry = !!(f & DE_F_DRY_RUN);
	int by_entry = dry || h->ask_dir ||
		((p->dir_hooks || h->dispose) && !(f & DE_F_HOOKS_AHEAD));
	/* The calling thread removes, or the batch walk does it for it. */
	int serial = dry || h->ask_dir || h->dispose || p->limit;
	int ordered = serial || sets || (f & DE_F_ORDERED) || p->dir_hooks;
	int global = !by_entry &&
		(ctx->cfg.schedule == DE_SCHED_GLOBAL ||
		 (ctx->cfg.schedule == DE_SCHED_AUTO && !latency_bound(fstype)));

	if (want_serial(ctx, fstype)) {
		*why = "one unlinker in canonical order pays here";
		return DE__M_SERIAL;
	}
	if (global) {
		*why = ctx->cfg.schedule == DE_SCHED_GLOBAL ? "asked for" :
		       "a local file system";
		return ordered ? DE__M_BATCH : DE__M_GLOBAL;
	}
	*why = dry ? "a dry run decides entry by entry" :
	       by_entry ? "the hooks decide entry by entry" :
	       ctx->cfg.schedule == DE_SCHED_DIRS ? "asked for" :
	       "every request waits for a server";
	return serial ? DE__M_SERIAL : ordered ? DE__M_ORDERED : DE__M_DIRS;
}

/*
 * de__chunk_blocks(): the directory blocks one inode order may cover on
 * dev (0: no bound; the calling thread only, between runs or planning
 * one), and journal_blocks(), the plan's bounds: half of an ext4
 * journal transaction (jbd2's "each up to N blocks"), or what the caller
 * set (de_test_global_window(), de-rm -W).
 *
 * Every unlink dirties the directory block its entry is in and the
 * inode-table block of its inode.  Blocks dirtied again before the
 * journal wraps round to them are only logged again, sequentially;
 * those that are not are written home, one seek each.  An order that
 * takes a whole huge directory by inode dirties its directory blocks at
 * random, more of them than a transaction holds, and writes most home
 * over and over.  Cut into runs of listing order (a listing goes
 * through the directory's blocks one after another: an htree's leaves
 * in hash order) of at most half a transaction's blocks, each
 * unlinked in inode order, a run's directory blocks stay in every
 * transaction until the run ends and are written home about once, and
 * each run is still one sweep of the inode table: docs/BENCHMARKS.md,
 * "Slow disks", the million-file directory.
 *
 * The window (global.c) takes the same bound; without a known journal
 * (not ext4), DE__WIN_BLOCKS, and a directory's listing stays whole.
 * Where the holes are filled (de__want_fill), a huge listing the caller
 * gave goes in runs of half of it, as a filled window does (order.c
 * de__run_bytes; global.c, "Filling the holes").
 */
size_t de__chunk_blocks(de_ctx *ctx, dev_t dev)
{
	if (!ctx->jtx_known || ctx->jtx_dev != dev) {
		ctx->jtx_blocks = dev ? de__journal_tx_blocks(dev) : 0;
		ctx->jtx_dev = dev;
		ctx->jtx_known = 1;
	}
	return ctx->global_blocks ? ctx->global_blocks : ctx->jtx_blocks / 2;
}

static void journal_blocks(de_ctx *ctx, dev_t dev, struct de__plan *p)
{
	p->chunk_blocks = de__chunk_blocks(ctx, dev);
	p->win_blocks = p->chunk_blocks ? p->chunk_blocks : DE__WIN_BLOCKS;
}

/*
 * Plan the run for a tree whose start directory is on fstype and dev (run.c):
 * its schedule, with the one it takes if the global schedule's probe
 * hands the tree over, and the bounds it goes by.  sets: one run of
 * de_remove_sets(), which the batch walk takes through its sets in turn.
 * Returns the workers the run wants; the caller fits them to the pool and
 * the fds, then calls de__plan_workers().
 */
unsigned de__plan(de_ctx *ctx, long fstype, dev_t dev, int sets)
{
	struct de__plan *p = &ctx->run.plan;
	int split;

	p->fs = fs_of(fstype)->name;
	p->dir_hooks = ctx->run.hooks->enter_dir != NULL;
	p->limit = ctx->run.limit.left >= 0;
	p->mode = p->planned = choose(ctx, fstype, sets, &p->why);
	/* A hand-over leaves the serial walk what it serves in canonical
	 * order: a limit and the hooks. */
	p->after_probe = p->mode == DE__M_GLOBAL ? DE__M_DIRS :
			 p->limit || p->dir_hooks || ctx->run.hooks->dispose ?
			 DE__M_SERIAL : DE__M_ORDERED;
	/* de_remove_sets() runs only where the device is known slow, and
	 * a device known slow (de_count()'s reads, an earlier run's probe)
	 * needs no probe: its reads may now come from the cache. */
	p->probe = de__global(ctx) && ctx->cfg.schedule == DE_SCHED_AUTO &&
		   !sets && de__dev_slow(ctx, dev) != 1;
	p->handed = 0;
	p->inode_sort = de__want_inode_sort(ctx, fstype);
	journal_blocks(ctx, dev, p);
	split = p->mode != DE__M_SERIAL && de__want_split(ctx, fstype);
	p->split_min = split ? DE__SPLIT_MIN : 0x7fffffff;
	p->split_idle_min = split ? DE__SPLIT_IDLE_MIN : 0x7fffffff;
	/*
	 * Nodes a scanning thread may hold scanned ahead of the unlinker
	 * on a chain (sched.c run_phase2): each keeps a pinned fd, so a
	 * quarter of the fd budget (de__ctx_start()), at most 32 (one
	 * wake-up of the reader per 32 directories, not one per directory).
	 */
	p->ahead_max = (unsigned)ctx->fd_budget / 4;
	if (p->ahead_max > DE__AHEAD_MAX)
		p->ahead_max = DE__AHEAD_MAX;
	if (p->ahead_max < 1)
		p->ahead_max = 1;
	p->win_max = DE__WIN_MAX;
	return ctx->cfg.threads ? ctx->cfg.threads : threads_for(ctx, fstype);
}

/* The probe found the reads fast (global.c hand_over): the pool takes
 * the tree, the run goes on in the mode planned for it. */
void de__plan_hand_over(de_ctx *ctx)
{
	struct de__plan *p = &ctx->run.plan;

	p->mode = p->after_probe;
	p->handed = 1;
}

/* With threads workers: phase 2's gate and whether a reader helps. */
void de__plan_workers(de_ctx *ctx, long fstype, unsigned threads)
{
	ctx->run.plan.threads = threads;
	ctx->run.plan.p2_gate = threads > 1 ? p2_gate(ctx, fstype) : 0;
	ctx->run.plan.p2_help = p2_help(ctx, fstype);
}

static const char *const mode_name[] = {
	[DE__M_DIRS] = "directory by directory",
	[DE__M_ORDERED] = "directory by directory, reports in order",
	[DE__M_SERIAL] = "serial walk",
	[DE__M_GLOBAL] = "global windows",
	[DE__M_BATCH] = "batch walk (global windows, reports in order)",
};

/* See delete_engine.h. */
int de_explain(const de_ctx *ctx, char *buf, size_t len)
{
	const struct de__plan *p;
	char probe[80] = "", chunks[64] = "";

	if (!ctx || !ctx->run.plan.fs)
		return -EINVAL;
	p = &ctx->run.plan;
	if (p->handed)
		snprintf(probe, sizeof(probe), "; first reads fast: %s",
			 mode_name[p->mode]);
	else if (p->probe)
		snprintf(probe, sizeof(probe), "; if the first reads are "
			 "fast: %s", mode_name[p->after_probe]);
	if (p->inode_sort && p->chunk_blocks)
		snprintf(chunks, sizeof(chunks), " in runs of %zu directory "
			 "blocks", p->chunk_blocks);
	return snprintf(buf, len, "%s: %s (%s)%s; %u worker%s, gate %u%s, "
			"%s order%s%s%s%s", p->fs, mode_name[p->planned], p->why,
			probe, p->threads, p->threads == 1 ? "" : "s",
			p->p2_gate, p->p2_help ? ", reader helps" : "",
			p->inode_sort ? "inode" : "listing", chunks,
			p->split_min < 0x7fffffff ? ", splits huge directories" :
			"", p->limit ? ", a limit" : "",
			p->dir_hooks ? ", enter_dir" : "");
}

/*
 * internal.h - private declarations of libdelete_engine.  Not installed.
 */
#ifndef DE_INTERNAL_H
#define DE_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "delete_engine_test.h"

#include "tunables.h"
#include "pool.h"

/* ---- sys.c -------------------------------------------------------- */

struct de__st {
	dev_t dev;
	ino_t ino;
	mode_t mode;
	uid_t uid;
	int mount_root;		/* 1 yes, 0 no, -1 unknown */
};

typedef int (*de__ent_cb)(void *arg, const char *name, size_t len,
			  uint64_t ino, enum de_type type);

int de__read_dir(de_ctx *ctx, int fd, const char *name, void *buf,
		 int names_ahead, de__ent_cb cb, void *arg);
int de__fstat(de_ctx *ctx, int fd, const char *name, struct de__st *st);
uint64_t de__subvol_id(int fd);
int de__lstatat(de_ctx *ctx, int dfd, const char *name, struct de__st *st);
int de__open_dir(de_ctx *ctx, int dfd, const char *name);
int de__reopen_dir(de_ctx *ctx, int dfd, const char *name);
int de__fd_budget(void);
int de__unlinkat(de_ctx *ctx, int dfd, const char *name, int flags);
int de__touch_at(de_ctx *ctx, int dfd, const char *name, dev_t dev,
		 uint64_t ino);
long de__fs_type(int fd);
size_t de__journal_tx_blocks(dev_t dev);

/* ---- node.c, scan.c, sched.c: the tree of directories in progress ---- */

/*
 * A directory's state (struct de__node.state, tree lock), changed only by
 * de__set_state(), which holds it to these transitions:
 *
 *   NEW ---> QUEUED ---> RUNNING ---> SCANNED ---> P2 ---> FILES ---> FINAL
 *    |                     ^            ^   |                           ^
 *    +---------------------+            |   +---------------------------+
 *    +----------------------------------+
 *
 * QUEUED: a task on the pool (sched.c de__schedule).  NEW to RUNNING: a
 * scan taken at once (run_phase2's chain, global.c's reads).  NEW to
 * SCANNED: a root, and a directory the batch walk never got to read
 * (walk.c).  SCANNED to FINAL: the batch walk's root, and the serial
 * walk's nodes, which it removes itself, are never in P2 (walk.c).
 */
enum { NS_NEW, NS_QUEUED, NS_RUNNING, NS_SCANNED, NS_P2, NS_FILES,
       NS_FINAL };

struct de__ent {
	uint32_t name;		/* offset into node->ls.arena */
	uint16_t len;
	uint8_t type;		/* enum de_type */
	uint8_t action;		/* enum de_action */
	uint8_t res;		/* enum de_result, non-dir or undescended dir */
	uint8_t op;
	uint8_t done;		/* res is final */
	int err;
	mode_t mode;
	uint64_t ino;
	struct de__node *child;
};

/*
 * A pin of a node's fd (node.c): while it is held, the fd stays open.
 * Pins travel as values, so that a signature shows who hands one to
 * whom: de__pin_take() makes one, de__pin_move() hands it on (the
 * giver's is empty after) and de__pin_drop() ends it.  fd is the node's
 * fd while held; when not, the negative errno of a take that failed, or
 * INT_MIN when none was tried (DE__NO_PIN).  In the debug build a pin
 * dropped twice, and a node freed with a pin on it, trip assertions.
 */
struct de__pin {
	struct de__node *n;	/* NULL: none held */
	int fd;
};
#define DE__NO_PIN	((struct de__pin){ NULL, INT_MIN })

static inline struct de__pin de__pin_move(struct de__pin *p)
{
	struct de__pin q = *p;

	*p = DE__NO_PIN;
	return q;
}

/* One event of the unordered emitter; strictly FIFO, never merged, so a
 * child's events always come before its parent's "self" event. */
struct de__ev {
	struct de__ev *next;
	struct de__node *node;
	int kind;
};

struct de__node {
	struct de__node *parent;
	de_ctx *ctx;
	struct de__work work;	/* its task on the pool (sched.c) */
	int state;		/* NS_*: de__set_state() (tree lock) */
	/* What the directory is (scan.c, from the listing, then fstat). */
	dev_t dev;		/* expected device, then the real one */
	ino_t ino;		/* from the scan (d_ino), then from fstat */
	mode_t mode;
	long fstype;
	int fd;			/* held fd or -1 (node.c; tree lock) */
	/* The lists n is on (tree lock): the live list (node.c), the
	 * deferred stack (sched.c de__schedule), node.c's idle fds, and
	 * sched.c's ready queue (run_phase2). */
	struct {
		struct de__node *lnext, *lprev;
		struct de__node *dnext, *dprev;
		struct de__node *inext, *iprev;
		int idle;	/* on run.tree.idle[idle - 1], or 0 */
		struct de__node *rnext;
		struct de__pin rpin;	/* on the ready queue: its pin */
	} links;
	/* Who still needs n (tree lock). */
	struct {
		int pins;	/* users of fd (node.c) */
		int refs;	/* self + children/chunks not final */
		int unopened;	/* children that still need our fd to open */
		int chunks;	/* unlink chunks pending (unlink.c) */
		int kept;	/* a child was not removed */
	} cnt;
	/* What has happened to n, each with its guard. */
	struct {
		int deferred;	/* on run.tree.deferred (tree lock) */
		int inwin;	/* counted in run.tree.win_live (tree lock) */
		int skip_scan;	/* not entered: res/op/err say why (scan.c,
				 * before NS_SCANNED) */
		int p2sub;	/* phase 2 started (tree lock) */
		int early;	/* children made and scheduled by the thread
				 * that scanned n (sched.c run_phase2, or
				 * global.c's window), so phase 2 must not
				 * make them again (that thread's) */
		int placed;	/* unlink.c de__check_place (atomic): 0 not
				 * checked, 1 in its parent, 2 moved out */
		int hooked;	/* DE__HOOK_*: enter_dir/leave_dir called
				 * (the calling thread; scan.c) */
		int base;	/* a set's directory, the caller's fd, never
				 * removed nor closed (de_remove_sets) */
	} fl;
	struct de__ev ev_files, ev_self;	/* event queue items */
	/* The listing, in canonical order when ordered (scan.c; read-only
	 * once n is NS_SCANNED). */
	struct {
		struct de__ent *ents;
		size_t nents, cap;
		char *arena;
		size_t alen, acap;
	} ls;
	/* This directory's own outcome. */
	uint8_t res, op;
	int err;
	unsigned set;		/* the set of targets n is under
				 * (de_remove_sets) */
	/* Depth below the root (0 for the root) and the length of the path
	 * relative to dirfd, fixed at creation: the emitter builds report
	 * paths from the previous one (node.c de__node_path). */
	size_t depth, pathlen;
	size_t namelen;
	char name[];
};

/*
 * Checks that cost a little at run time and catch a broken invariant
 * early: on in the sanitizer builds (make check-asan, check-tsan), which
 * define DE_DEBUG, off in the library rsync links.
 */
#ifdef DE_DEBUG
#include <assert.h>
#define DE__ASSERT(x)	assert(x)
#else
#define DE__ASSERT(x)	((void)0)
#endif

/* Set n's state to.  Tree lock held. */
static inline void de__set_state(struct de__node *n, int to)
{
#define S(x) (1u << (x))
	static const unsigned char from[NS_FINAL + 1] = {
		[NS_QUEUED] = S(NS_NEW),
		[NS_RUNNING] = S(NS_NEW) | S(NS_QUEUED),
		[NS_SCANNED] = S(NS_NEW) | S(NS_RUNNING),
		[NS_P2] = S(NS_SCANNED),
		[NS_FILES] = S(NS_P2),
		[NS_FINAL] = S(NS_SCANNED) | S(NS_FILES),
	};
#undef S

	DE__ASSERT(to > NS_NEW && to <= NS_FINAL &&
		   (from[to] & (1u << n->state)));
	(void)from;
	n->state = to;
}

#define DE__EV_FILES	1
#define DE__EV_SELF	2

/* The node whose work item w is. */
#define DE__NODE_OF(w) \
	((struct de__node *)((char *)(w) - offsetof(struct de__node, work)))

/* ---- policy.c: the plan of a run ---------------------------------- */

/*
 * The schedule a run takes.  policy.c alone writes it: de__plan() when
 * the run starts, de__plan_hand_over() when the global schedule's probe
 * finds the reads fast and hands the tree to the pool.
 *   DIRS     a task per directory on the pool (sched.c); the calling
 *            thread reports as work completes (emit.c)
 *   ORDERED  the same, the calling thread walking the tree to report in
 *            canonical order (walk.c)
 *   SERIAL   the calling thread removes in canonical order, the workers
 *            only read ahead (walk.c)
 *   GLOBAL   the calling thread reads windows of the tree and unlinks
 *            each window's files in one inode order (global.c)
 *   BATCH    GLOBAL's windows under the ordered walk (walk.c)
 */
enum de__mode { DE__M_DIRS, DE__M_ORDERED, DE__M_SERIAL, DE__M_GLOBAL,
		DE__M_BATCH };

struct de__plan {
	enum de__mode mode;
	enum de__mode planned;		/* the mode de__plan() chose */
	enum de__mode after_probe;	/* GLOBAL, BATCH: the mode after a
					 * hand-over */
	const char *why;		/* the rule that chose mode */
	const char *fs;			/* the file system's row (policy.c) */
	int probe;			/* GLOBAL, BATCH: time the first reads */
	int handed;			/* the probe handed the tree over */
	int dir_hooks;			/* enter_dir set: the walk enters */
	int limit;			/* max_delete set */
	unsigned threads;		/* workers allowed */
	unsigned p2_gate;		/* policy.c p2_gate */
	int p2_help;			/* policy.c p2_help */
	int inode_sort;			/* unlink in inode order */
	/* Directory blocks one inode order covers at most: a window of the
	 * global schedule (global.c), and the chunks a huge directory's
	 * listing is unlinked in (order.c de__inode_order); 0 for the
	 * latter: one order for the whole listing.  policy.c
	 * journal_blocks() says why. */
	size_t win_blocks, chunk_blocks;
	int split_min;			/* split a directory's unlinks from */
	int split_idle_min;		/* ... or from this with nothing queued */
	/* Nodes a reader may hold scanned ahead on a chain (sched.c
	 * run_phase2), and READY_ENTS_MAX entries. */
	unsigned ahead_max;
	unsigned win_max;		/* ordered runs: directories scanned
					 * ahead of the walk (walk.c) */
};

/* ---- ctx.c -------------------------------------------------------------- */

struct de__pacer;			/* pace.c's own */

/*
 * One context, in three parts, each owned by the code that uses it:
 * what lives as long as the context (ctx.c), one de_remove() call's run
 * (struct de__run: run.c sets it up, sched.c and global.c work in it),
 * and the phase-2 scheduler's queue, which outlives a call (struct
 * de__sched, sched.c).  The pacer's state is pace.c's own.
 */
struct de__run {
	/* Tree lock (ctx->mu) protects everything but what says otherwise. */
	unsigned flags;			/* cfg.flags and de_opts.flags */
	int waiting;			/* the calling thread waits on ctx->cv */
	const struct de_hooks *hooks;
	struct de_hooks nohooks;
	struct de__plan plan;		/* policy.c's alone to write */
	int cancel;			/* atomic: de__cancelled() */
	struct de__node *root;
	pthread_t caller;		/* the thread in de_remove() */
	struct de_summary sum;
	/* node.c and sched.c: the nodes in progress. */
	struct {
		struct de__node *live;
		struct de__node *deferred;	/* stack head */
		/* node.c's fd cache: held fds no one pins, most recently
		 * unpinned first; [1] those that children still open
		 * themselves from.  Empty between calls: a node leaves
		 * them when it is freed. */
		struct de__node *idle[2], *idle_tail[2];
		int nfds;
		unsigned win_live;	/* ordered runs: nodes in the window */
		uint64_t scans_inflight;
	} tree;
	/* The unordered emitter's queue (unlink.c pushes, emit.c pops). */
	struct {
		struct de__ev *head, *tail;
		unsigned count;		/* events queued */
		size_t ents;		/* entries their listings hold */
	} ev;
	/* max_delete: the calling thread's (de_limit_take). */
	struct {
		long long left;		/* -1: none */
		int hit;
	} limit;
	/* The batch walk (global.c, walk.c): an ordered run in the global
	 * schedule; NULL otherwise.  The calling thread's. */
	struct {
		struct de__global *gwin;
		struct de__batch *batch;
	} walk;
	/* Reports and progress (emit.c): the calling thread's but for
	 * unlinked. */
	struct {
		struct de_progress prog;
		uint64_t t0_ms;
		uint64_t last_prog_ms;
		/* The report buffer ctx->pbuf starts with this node's path
		 * (pbuf_node->pathlen bytes), or nothing is known when
		 * NULL.  Only the emitter frees nodes, and it moves
		 * pbuf_node to the parent first (emit.c de__emit_free). */
		const struct de__node *pbuf_node;
		/* Successful unlinks and rmdirs, counted by the workers as
		 * they go (atomic): reports of a directory's entries may
		 * wait until the directory is done, and progress must not
		 * stall meanwhile. */
		uint64_t unlinked;
		unsigned caller_ticks;	/* the calling thread's removals */
		/* Lets the run deliver progress from the calling thread
		 * while it makes removals itself (unlink.c de__remove_at,
		 * every 64th): a call up the layers, through a pointer
		 * (README.md, "Layers"). */
		void (*tick)(de_ctx *ctx);
	} rep;
	struct { const struct de_target *t; size_t n; } fill; /* de_opts' */
};

/*
 * Phase-2 admission (sched.c run_phase2): p2_active workers are
 * unlinking; another may join only while at least run.p2_gate directory
 * tasks are queued (0: always).  Scanned nodes that may not join wait on
 * the ready queue (FIFO) for a worker already in phase 2.  Not reset per
 * call: all are back to 0/NULL when the root is final, but the last
 * worker may not have left run_phase2 yet when the next call starts (it
 * only takes the lock and finds the queue empty, or takes the new call's
 * node, both fine).  Tree lock.
 */
struct de__sched {
	int p2_active;
	struct de__node *ready, *ready_tail;
	unsigned nready;
	size_t ready_ents;		/* the entries their listings hold */
};

struct de_ctx {
	struct de_config cfg;
	de_fault_fn fault;		/* delete_engine_test.h; NULL */
	void *fault_arg;
	struct de__pool pool;
	int pool_ready;
	pid_t pid;
	unsigned nthreads;		/* pool size */
	void *caller_buf;
	int fd_budget;
	/* global.c's window bounds; 0: its defaults (delete_engine_test.h) */
	size_t global_ents, global_blocks;
	int global_fill;		/* de_test_global_fill() */
	/*
	 * policy.c: the journal transaction size of device jtx_dev, read
	 * once per device, not on each call: rsync calls once per directory.
	 */
	dev_t jtx_dev;
	size_t jtx_blocks;
	int jtx_known;
	/*
	 * policy.c de__note_read: the directory reads timed on device
	 * read_dev (by global.c's probe, or the caller: de_note_read), and
	 * what they told: -1 nothing yet, 0 a fast disk, 1 a slow one.
	 * Across calls, as rsync calls once per directory of a sync.
	 */
	dev_t read_dev;
	int read_known;
	unsigned nread;
	uint64_t read_ns[DE__PROBE_DIRS];
	int read_slow;
	pthread_mutex_t mu;		/* the tree lock */
	pthread_cond_t cv;		/* the calling thread waits here */
	char *pbuf;			/* report paths (calling thread) */
	size_t pcap;
	struct de__pacer *pace;		/* pace.c: the rate limit */
	struct de__push *push;		/* push.c: this call's, or NULL */
	/*
	 * Closes a held, unpinned fd (node.c de__shed_fd) for sys.c under
	 * EMFILE: a call up the layers, through a pointer set once (ctx.c).
	 */
	int (*shed_fd)(de_ctx *ctx);

	struct de__run run;		/* this de_remove() call */
	struct de__sched sched;		/* sched.c's, across calls */
};

/* The plan's mode, asked as the code asks it: whether the calling thread
 * walks the tree in canonical order (walk.c), whether it alone removes,
 * and whether global.c's windows read the tree. */
static inline int de__ordered(const de_ctx *ctx)
{
	enum de__mode m = ctx->run.plan.mode;

	return m == DE__M_ORDERED || m == DE__M_SERIAL || m == DE__M_BATCH;
}

static inline int de__serial(const de_ctx *ctx)
{
	return ctx->run.plan.mode == DE__M_SERIAL;
}

static inline int de__global(const de_ctx *ctx)
{
	enum de__mode m = ctx->run.plan.mode;

	return m == DE__M_GLOBAL || m == DE__M_BATCH;
}

/* Whether this is the thread in de_remove() (the calling thread), which
 * alone delivers reports, walks and frees nodes. */
static inline int de__is_caller(const de_ctx *ctx)
{
	return pthread_equal(pthread_self(), ctx->run.caller);
}

static inline int de__fault(de_ctx *ctx, int op, const char *name)
{
	if (ctx->fault)
		return ctx->fault(ctx->fault_arg, op, name);
	return 0;
}

uint64_t de__now_ms(void);
uint64_t de__now_ns(void);

/* Set by the calling thread, polled by workers without the lock. */
static inline int de__cancelled(de_ctx *ctx)
{
	return __atomic_load_n(&ctx->run.cancel, __ATOMIC_RELAXED);
}
int de__ctx_start(de_ctx *ctx);

/* The tree lock (ctx->mu): node.c, scan.c, sched.c and walk.c say what
 * it protects. */
static inline void de__lock(de_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mu);
}

static inline void de__unlock(de_ctx *ctx)
{
	pthread_mutex_unlock(&ctx->mu);
}

/*
 * The node and event lists, all under the tree lock, named by their link
 * fields: the live list and the deferred stack are doubly linked (pushed
 * at the head, unlinked from anywhere), the event and ready queues are
 * FIFOs (appended at the tail).
 */
#define DLIST_PUSH(head, e, next, prev) do {				\
	(e)->prev = NULL;						\
	(e)->next = (head);						\
	if (head)							\
		(head)->prev = (e);					\
	(head) = (e);							\
} while (0)

#define DLIST_DEL(head, e, next, prev) do {				\
	if ((e)->prev)							\
		(e)->prev->next = (e)->next;				\
	else								\
		(head) = (e)->next;					\
	if ((e)->next)							\
		(e)->next->prev = (e)->prev;				\
} while (0)

#define FIFO_APPEND(head, tail, e, next) do {				\
	(e)->next = NULL;						\
	if (tail)							\
		(tail)->next = (e);					\
	else								\
		(head) = (e);						\
	(tail) = (e);							\
} while (0)

/* pace.c */
int de__pace_init(de_ctx *ctx);
void de__pace_destroy(de_ctx *ctx);
void de__pace(de_ctx *ctx);
unsigned de__pace_rate(de_ctx *ctx);

/* node.c: nodes and their fds */
struct de__node *de__node_new(de_ctx *ctx, struct de__node *parent,
			      const char *name, size_t len, uint64_t ino);
void de__node_free(de_ctx *ctx, struct de__node *n);
/*
 * Build n's path relative to dirfd into ctx->pbuf (the calling thread's),
 * with room for extra more bytes and a NUL.  Returns its length or -1 on
 * ENOMEM.
 */
long de__node_path(de_ctx *ctx, const struct de__node *n, size_t extra);
int de__node_pin(de_ctx *ctx, struct de__node *n, int childfd);
struct de__pin de__pin_take(de_ctx *ctx, struct de__node *n, int childfd);
void de__pin_drop(de_ctx *ctx, struct de__pin *p);
int de__pin_drop_locked(de_ctx *ctx, struct de__pin *p);
void de__node_unpin(de_ctx *ctx, struct de__node *n);
int de__unpin_locked(de_ctx *ctx, struct de__node *n);
int de__shed_fd(de_ctx *ctx);
void de__wake(de_ctx *ctx);
void de__signal(de_ctx *ctx);

/* scan.c: reading one directory */
int de__scan_node(de_ctx *ctx, struct de__node *n, void *buf, int keep_pin,
		  struct de__pin *pin);
/* The enter_dir and leave_dir hooks for n, each at most once, on the
 * calling thread (n->fl.hooked). */
#define DE__HOOK_NONE		0
#define DE__HOOK_ENTERED	1
#define DE__HOOK_DONE		2	/* left, or never to be left */
void de__enter_dir(de_ctx *ctx, struct de__node *n);
void de__leave_dir(de_ctx *ctx, struct de__node *n);
int de__add_ent(struct de__node *n, const char *name, size_t len,
		uint64_t ino, enum de_type type);
/* Growing a listing or peek.c's fillers, doubling: v with room for one more
 * (NULL: none); name appended (offset below UINT32_MAX, or -ENOMEM). */
void *de__grow(void *v, size_t n, size_t *cap, size_t size, size_t first);
long de__arena_add(char **a, size_t *len, size_t *cap, const char *name,
		   size_t nlen);

/* unlink.c: removing what a directory holds, and the directory */
int de__remove_at(de_ctx *ctx, int dfd, const char *name, int flags,
		  int pace);
int de__unlink_ent(de_ctx *ctx, struct de__node *n, int fd,
		   struct de__ent *e, int pace);
int de__rmdir_node(de_ctx *ctx, struct de__node *n, const struct de__pin *np,
		   struct de__pin *pp, int *op, int *err);
int de__unopened_for_perm(const struct de__node *n);
int de__rmdir_unread(de_ctx *ctx, struct de__node *n, struct de__pin *pp,
		     int *op, int *err);
int de__check_place(de_ctx *ctx, struct de__node *n);
void de__node_keep(de_ctx *ctx, struct de__node *n);
void de__node_release(de_ctx *ctx, struct de__node *n, struct de__pin pin);
enum de__files {
	DE__FILES_NONE,		/* nothing to unlink */
	DE__FILES_LISTED,	/* in listing order (what is left) */
	DE__FILES_SORTED,	/* in one inode order, split when huge */
};
/*
 * Unlink n's files through pin, the caller's pin of n, handed over (or,
 * not held, the negative errno of taking it), publish them (NS_FILES)
 * and drop n's own reference.  The end of every unlink phase (sched.c).
 */
void de__unlink_files(de_ctx *ctx, struct de__node *n, struct de__pin pin,
		      enum de__files what);

/* sched.c: the parallel schedule */
struct de__pin de__scan(de_ctx *ctx, struct de__node *n, void *buf,
		       int keep_pin);
void de__prepare_serial(de_ctx *ctx, struct de__node *n);
void de__schedule(de_ctx *ctx, struct de__node *n);
void de__pump(de_ctx *ctx);
void de__undefer(de_ctx *ctx, struct de__node *c, int in_window);
void de__task(struct de__work *w, void *buf);
void de__make_children(de_ctx *ctx, struct de__node *n);
void de__node_running(de_ctx *ctx, struct de__node *n);
/*
 * The unlink phase (phase 2) of scanned node n: make and schedule its
 * children, unlink its files, drop its own reference.  How, by kind:
 *   NOW         here, now: the calling thread, a node not entered, a
 *               window's last huge directory
 *   LEFT        here, of a node whose files the global schedule
 *               unlinked: what is left of them (children made already)
 *   POOL        on a worker, bypassing the gate: a window's nodes
 *               handed over (children made and scheduled: n->fl.early)
 *   POOL_GATED  on a worker, under phase-2 admission (run_phase2):
 *               hook mode, once enter_dir decided
 * pin: the caller's pin of n, handed over (none for the POOL kinds).
 */
enum de__p2 { DE__P2_NOW, DE__P2_LEFT, DE__P2_POOL, DE__P2_POOL_GATED };
void de__unlink_phase(de_ctx *ctx, struct de__node *n, struct de__pin pin,
		      enum de__p2 kind);

/*
 * The result of removing an entry from rc, de__remove_at()'s value, or the
 * negative errno of reaching the directory that holds it: DE_R_REMOVED,
 * DE_R_VANISHED (ENOENT: someone else removed the entry, or the directory
 * that held it, after it was listed; stock rsync, which goes by path,
 * sees the same) or DE_R_FAILED with *err set.  Inline: it runs once per
 * unlinked file (unlink.c unlink_range).
 */
static inline int de__rm_result(int rc, int *err)
{
	if (rc == 0)
		return DE_R_REMOVED;
	if (rc == -ENOENT)
		return DE_R_VANISHED;
	*err = -rc;
	return DE_R_FAILED;
}

/* order.c */
void de__sort_canonical(de_ctx *ctx, struct de__node *n);
uint32_t *de__inode_order(struct de__node *n, int fd, size_t *count);
/* Bytes of n's entry e in an ext4 directory block: what a listing's
 * share of its directory's blocks is counted in (global.c, order.c). */
static inline size_t de__name_bytes(size_t len)
{
	return (8u + len + 3u) & ~(size_t)3;
}

static inline size_t de__dirent_bytes(const struct de__ent *e)
{
	return de__name_bytes(e->len);
}
/* A file among several directories' (global.c's window, batch.c's
 * batch): n's entry i, and k, the caller's index of n. */
struct de__ino_ent {
	uint64_t ino;
	struct de__node *n;
	uint32_t i, k;
};
void de__sort_by_ino(struct de__ino_ent *v, size_t n);
/* Sort v[0..n), n elements of size bytes, in runs: a run closes once its
 * elements' bytes_of() reach run (0: all one run), each sorted by cmp (arg
 * to both): a huge directory's or a window's files, in runs of the
 * directory blocks a journal transaction keeps (policy.c journal_blocks). */
void de__sort_runs(void *v, size_t n, size_t size, size_t run,
		   size_t (*bytes_of)(const void *el, void *arg),
		   int (*cmp)(const void *, const void *, void *), void *arg);
/* de__sort_runs() of window entries by inode, bytes their dirents'. */
void de__sort_ino_runs(struct de__ino_ent *v, size_t n, size_t run);

/* policy.c */
unsigned de__plan(de_ctx *ctx, long fstype, dev_t dev, int sets);
size_t de__chunk_blocks(de_ctx *ctx, dev_t dev);
void de__plan_workers(de_ctx *ctx, long fstype, unsigned threads);
void de__plan_hand_over(de_ctx *ctx);
int de__dino_is_stat(long fstype);
int de__dino_from_layer(long fstype);
int de__want_inode_sort(de_ctx *ctx, long fstype);
int de__sort_targets(de_ctx *ctx, long fstype);
int de__want_split(de_ctx *ctx, long fstype);
int de__want_fill(const de_ctx *ctx);
int de__want_names_ahead(long fstype);
int de__slow_reads(const uint64_t *ns, unsigned n);
int de__note_read(de_ctx *ctx, dev_t dev, uint64_t ns, size_t nents);
void de__set_slow(de_ctx *ctx, dev_t dev, int slow);
int de__dev_slow(const de_ctx *ctx, dev_t dev);

/* ctx.c */
unsigned de__ctx_grow(de_ctx *ctx, unsigned n);

/* emit.c: the calling thread's reports, progress and sleeps.  The tree
 * lock is held by the caller of de__sleep_locked() and de__emit_queued()
 * (which drop it while they report), by no one for the rest. */
void de__emit_free(de_ctx *ctx, struct de__node *c);
void de__maybe_progress(de_ctx *ctx, int force);
void de__caller_tick(de_ctx *ctx);
void de__report_ent(de_ctx *ctx, struct de__node *n, long dlen,
		    const struct de__ent *e);
void de__report_self(de_ctx *ctx, struct de__node *c);
void de__sleep_locked(de_ctx *ctx);
void de__wait_state(de_ctx *ctx, struct de__node *n, int state);
void de__emit_queued(de_ctx *ctx);
void de__drain_events(de_ctx *ctx);

#include "global.h"

/* walk.c: the calling thread's walks (ordered, serial, batch) and the
 * global schedule's unordered loop. */
int de__ordered_walk(de_ctx *ctx, struct de__node *n, int nfd);
void de__run_global(de_ctx *ctx, struct de__node *r);
int de__batch_start(de_ctx *ctx, struct de__node *r, struct de__global *g,
		    struct de__batch *b, int probe);
void de__batch_end(de_ctx *ctx, struct de__node *r);

#define de__ent_name(n, e) ((n)->ls.arena + (e)->name)

#endif /* DE_INTERNAL_H */

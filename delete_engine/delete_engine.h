/*
 * delete_engine.h - fast, parallel, safe tree deletion.
 *
 * The single public header of libdelete_engine.  Every public name starts
 * with de_ / DE_.  Functions return 0 or a negative errno value and never
 * rely on errno after they return.
 *
 * Threading: a de_ctx owns a pool of worker threads.  All callbacks in
 * struct de_hooks run on the thread that called de_remove(), never on a
 * worker, with the single exception of the pure comparator (compare),
 * which may run on workers (and the fault hook of delete_engine_test.h).
 * One de_remove() at a time per context.  Two contexts may coexist.
 *
 * fork(): worker threads are started lazily by the first de_remove() and
 * are idle (holding no lock) whenever de_remove() is not running.  A context
 * must not be used in a child process after fork(); de_remove() returns
 * -ECHILD there.  Create contexts after forking (rsync: in the generator).
 */
#ifndef DELETE_ENGINE_H
#define DELETE_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct de_ctx de_ctx;

enum de_type {
	DE_T_UNKNOWN = 0,	/* in a target: the engine fstatat()s it */
	DE_T_FILE,
	DE_T_DIR,
	DE_T_SYMLINK,
	DE_T_DEVICE,		/* block or character device */
	DE_T_SPECIAL,		/* fifo or socket */
	DE_T_COUNT
};

/* Flags for de_config.flags. */
#define DE_F_DRY_RUN		0x0001u	/* remove nothing; report "would remove" */
#define DE_F_ONE_FILE_SYSTEM	0x0002u	/* never leave the st_dev of dirfd */
#define DE_F_MAKE_WRITABLE	0x0004u	/* chmod u+w own dirs that lack it
					 * (rsync's rule; an unreadable one
					 * is not opened up) */
#define DE_F_ORDERED		0x0008u	/* reports in canonical order */
#define DE_F_PLAIN_ORDER	0x0040u	/* rsync protocol < 29 sort order */
#define DE_F_TARGET_FS		0x0800u	/* with DE_F_ONE_FILE_SYSTEM: the
					 * device not to leave is each
					 * target's own, not dirfd's (rm's
					 * --one-file-system) */
/*
 * The enter_dir, leave_dir and dispose hooks may run ahead of the reports
 * (de_opts.flags only), so that a run with them can take the global
 * schedule: enter_dir and leave_dir as the engine reads the tree, still
 * depth first in canonical order and properly nested, and dispose for
 * the files of many directories in one inode order.  Reports keep their
 * order; the hooks must not depend on them.  Where the schedule is not
 * global, or the first reads are fast (DE_SCHED_AUTO), removals are
 * serial, as without the flag.
 */
#define DE_F_HOOKS_AHEAD	0x1000u
/* 0x0010-0x0020 and 0x0080-0x0400: measuring overrides, in
 * delete_engine_test.h. */

struct de_config {
	unsigned threads;	/* 0: online CPUs (sysconf) */
	unsigned flags;		/* DE_F_* */
	long long max_delete;	/* < 0: unlimited */
	unsigned progress_ms;	/* 0: 1000 */
	/*
	 * Politeness: at most this many removals (unlinks, rmdirs and
	 * entries the dispose hook takes) per second over all workers,
	 * spaced evenly; 0: as fast as possible.
	 */
	unsigned rate;
	/*
	 * With rate: removals come in bursts of this many, back to back,
	 * each burst rate_burst / rate seconds after the last (0 or 1: evenly
	 * spaced).  Bursts journal each metadata block once rather than in
	 * every commit (pace.c).
	 */
	unsigned rate_burst;
	/*
	 * Politeness that adapts (with rate): rate applies only while other
	 * processes wait for I/O, and otherwise rate_max (0: as fast as
	 * possible).  The engine tells them apart with quiet windows: all
	 * removals stop for a moment and the stall time that grows then is
	 * others' (pace.c).  Without a signal (no PSI, not Linux), rate
	 * applies throughout.
	 */
	int adaptive;
	unsigned rate_max;
	/*
	 * With adaptive and a signal: the pace while others wait, in place
	 * of rate when lower (0: rate).  Bursts keep their length in time,
	 * rate_burst / rate seconds, and so shrink in proportion.  rate
	 * stays the pace without a signal.
	 */
	unsigned rate_busy;
	/*
	 * With adaptive and a signal: for this many milliseconds after
	 * others start waiting, no removals at all; rate_busy (or rate)
	 * applies only while they wait longer (0: at once).  Why: pace.c.
	 */
	unsigned yield_ms;
	/*
	 * With adaptive: the signal, the total time in microseconds that
	 * some task has waited for I/O, ever growing; 0 and *us, or -1 when
	 * there is none.  NULL: Linux's /proc/pressure/io ("some total=").
	 */
	int (*pressure)(void *arg, uint64_t *us);
	void *pressure_arg;
	/*
	 * The order of removals (enum de_schedule).  DE_SCHED_DIRS:
	 * directory by directory, each one's files in inode order, on the
	 * pool.  DE_SCHED_GLOBAL: the calling thread reads a window of the
	 * tree and unlinks all its files in one inode order, for disks
	 * where the requests are the cost (rotating, IOPS-capped; global.c).
	 * DE_SCHED_AUTO (0, the default): global while the first directories
	 * read are slow to come off the disk, else directory by directory
	 * (policy.c de__slow_reads).  Ordered reports and max_delete keep
	 * their canonical order and exactness in the global schedule: it
	 * removes a window's entries in inode order, then reports them in
	 * canonical order.  Runs that decide entry by entry (a dry run, the
	 * enter_dir, dispose and ask_dir hooks) are always directory by
	 * directory.
	 */
	unsigned schedule;
};

enum de_schedule {
	DE_SCHED_AUTO = 0,
	DE_SCHED_DIRS,
	DE_SCHED_GLOBAL
};

/* The operation that failed (de_report.op). */
enum de_op {
	DE_OP_NONE = 0,
	DE_OP_OPEN,
	DE_OP_READ,
	DE_OP_STAT,
	DE_OP_UNLINK,
	DE_OP_RMDIR,
	DE_OP_CHMOD
};

enum de_result {
	DE_R_REMOVED = 0,	/* removed ("would remove" in a dry run) */
	DE_R_FAILED,		/* op failed with err */
	DE_R_NOT_EMPTY,		/* dir kept: a child was kept or failed */
	DE_R_SKIPPED,		/* after max_delete: left in place */
	DE_R_MOUNT,		/* mount point: not entered, kept */
	DE_R_OTHER_FS,		/* other fs with DE_F_ONE_FILE_SYSTEM: kept */
	DE_R_KEPT,		/* a hook said DE_A_KEEP */
	DE_R_DONE,		/* the enter_dir hook said DE_A_DONE */
	DE_R_VANISHED		/* already gone (ENOENT): nothing to do; op is
				 * DE_OP_STAT when the lstat of a target found
				 * it gone, else the removal or open that did */
};

struct de_report {
	const char *path;	/* relative to dirfd; for messages only */
	enum de_type type;
	mode_t mode;		/* 0 when the engine did not stat it */
	enum de_result result;
	enum de_op op;		/* DE_R_FAILED: what failed; DE_R_REMOVED:
				 * DE_OP_OPEN for a directory that could
				 * not be opened, empty, removed by rmdir */
	int err;		/* with op: positive errno; DE_R_KEPT:
				 * the dispose hook's errno, or 0 */
	int dry_run;		/* 1: nothing was actually removed */
	unsigned set;		/* de_remove_sets(): the set whose dirfd
				 * path is relative to; 0 for de_remove() */
};

enum de_action {
	DE_A_DELETE = 0,	/* default */
	DE_A_KEEP,		/* protected/excluded: stays, parent kept */
	DE_A_DONE		/* caller disposed of it: counted as removed */
};

struct de_dirent {
	const char *name;
	enum de_type type;
	enum de_action action;	/* set by the enter_dir hook */
};

#define DE_PACE_YIELD	(~0u)

struct de_progress {
	uint64_t removed;	/* entries removed (or would be) so far */
	uint64_t failed;
	uint64_t dirs_pending;	/* directories started, not finished */
	uint64_t elapsed_ms;
	/* The pace now, removals per second; 0: no limit; DE_PACE_YIELD:
	 * none, others' I/O goes first (de_config.yield_ms). */
	unsigned pace;
	/* de_count() only: entries counted so far (removed is 0). */
	uint64_t counted;
};

struct de_hooks {
	void *arg;
	/* One call per entry, in canonical order when ordered (see README). */
	void (*report)(void *arg, const struct de_report *r);
	/* At least every progress_ms while working; non-zero cancels. */
	int (*progress)(void *arg, const struct de_progress *p);
	/*
	 * Called for every directory about to be emptied, in depth-first
	 * pre-order, with its listing in canonical (deletion) order; set
	 * ents[i].action.  Non-zero return cancels the run.  Setting this
	 * hook implies ordered reports.
	 */
	int (*enter_dir)(void *arg, const char *relpath,
			 struct de_dirent *ents, size_t n);
	/* Matches each enter_dir, properly nested. */
	void (*leave_dir)(void *arg, const char *relpath);
	/*
	 * Optional: called for every non-directory the engine would remove
	 * (targets and entries inside them, those the enter_dir hook left to
	 * be deleted), in canonical order, at the moment its removal is due,
	 * instead of removing it.  dirfd is the engine's own fd of the
	 * directory that holds name (do not close it; in a target it is the
	 * caller's dirfd), relpath is the entry's path for messages.  Return
	 * DE_A_DONE when the caller disposed of the entry relative to dirfd
	 * (rsync: renamed it into a backup; reported DE_R_DONE and counted
	 * as removed), DE_A_DELETE to have the engine unlink it as usual, or
	 * DE_A_KEEP to leave it (reported DE_R_KEPT, with err the errno the
	 * hook left, 0 if it set none: a failure the report hook can then
	 * name in canonical order; its directories are kept).  It is called
	 * in a dry run too, where it must change nothing.  Setting this hook
	 * makes removals serial: the calling thread makes each one in order,
	 * while workers read directories ahead (or, with DE_F_HOOKS_AHEAD in
	 * the global schedule, in each batch's inode order).
	 */
	enum de_action (*dispose)(void *arg, int dirfd, const char *name,
				  const char *relpath, enum de_type type);
	/*
	 * Optional: asked about each directory the engine is about to
	 * enter or remove, on the calling thread, in canonical order, the
	 * way rm -i asks: with rmdir 0 before the walk goes into a
	 * directory whose listing is not empty, and with rmdir 1 before
	 * the rmdir of a directory whose entries are all gone (or that had
	 * none).  dirfd and name are the directory's parent's fd (the
	 * engine's, or the caller's dirfd for a target; do not close it)
	 * and its name there, relpath its path for messages.  Return
	 * DE_A_DELETE to go on, or DE_A_KEEP to leave the directory and
	 * all it holds (reported DE_R_KEPT, and its directories kept).  A
	 * directory the engine may not open (EACCES, EPERM) is asked both,
	 * as rm -i asks of one it cannot read: its rmdir removes it if it
	 * is empty.  Setting this hook makes
	 * removals serial, as dispose does; with both, dispose asks about
	 * the non-directories.
	 */
	enum de_action (*ask_dir)(void *arg, int dirfd, const char *name,
				  const char *relpath, int rmdir);
	/*
	 * Optional: rsync's ascending sort order of two names in one
	 * directory (<0, 0, >0).  Must be pure and reentrant: it may run on
	 * worker threads.  NULL: protocol >= 29 order (non-directories
	 * first, then directories, each by unsigned bytes), or plain bytes
	 * with DE_F_PLAIN_ORDER.
	 */
	int (*compare)(const char *a, int a_is_dir, const char *b,
		       int b_is_dir);
	/*
	 * Results not to report: an entry whose result r has bit (1u << r)
	 * set is only counted in the summary; report is not called and no
	 * path is built for it.  0 (the default): report every entry.  A
	 * caller that only counts removals sets (1u << DE_R_REMOVED) |
	 * (1u << DE_R_VANISHED) and reads the counts from de_summary.
	 */
	unsigned skip_results;
};

struct de_summary {
	uint64_t removed[DE_T_COUNT];	/* per type, DE_T_FILE.. */
	uint64_t removed_total;
	uint64_t failed;
	uint64_t not_empty;
	uint64_t skipped;
	uint64_t mounts;	/* DE_R_MOUNT and DE_R_OTHER_FS */
	uint64_t kept;		/* DE_R_KEPT */
	uint64_t vanished;
};

struct de_target {
	const char *name;	/* one entry directly inside dirfd */
	enum de_type type;	/* DE_T_UNKNOWN: the engine fstatat()s it */
	uint64_t ino;		/* d_ino when the caller read it, else 0: lets
				 * the engine unlink targets in inode order */
};

/*
 * Create a context.  cfg may be NULL (defaults).  Returns 0 and sets *out,
 * or -EINVAL / -ENOMEM.  No thread is started until de_remove().
 */
int de_ctx_new(de_ctx **out, const struct de_config *cfg);

/* Stop the workers and free everything.  NULL is fine. */
void de_ctx_free(de_ctx *ctx);

/*
 * What one de_remove() call may do differently from its context's
 * de_config, so that a caller that needs both ordered and unordered
 * reports, or a limit per call, holds one context (and one pool).
 */
struct de_opts {
	unsigned flags;		/* DE_F_ORDERED, DE_F_DRY_RUN,
				 * DE_F_HOOKS_AHEAD: added to the context's
				 * flags for this call (others are
				 * ignored) */
	long long max_delete;	/* >= 0: this call's limit (de_limit_take()
				 * counts against it); < 0: the context's
				 * de_config.max_delete */
	/* The targets de_order_cut() held back, which the caller hands to
	 * its next call into the same dirfd: this call (de_remove(), or
	 * de_remove_sets() of one set) may mark any of them changed, its
	 * mode set to what it is, never more.  NULL: none. */
	const struct de_target *fill;
	size_t nfill;
};

/*
 * Remove the n targets directly inside dirfd, each recursively (a
 * directory's contents first, the directory itself last).  dirfd itself is
 * never removed, and stays owned by the caller.  hooks, opts and sum may be
 * NULL.
 * Returns 0 when nothing failed (entries kept on purpose, by the hook or as
 * mount points, are not failures); -EIO when some entry failed (details
 * went to the report hook and sum); -EDQUOT when max_delete left entries
 * in place; -ECANCELED when a hook cancelled; another negative errno on a
 * setup failure (-EINVAL, -ENOMEM, -EAGAIN, -ENOTDIR for dirfd, -ECHILD
 * when used in a child after fork()).  Reports already delivered stand.
 */
int de_remove(de_ctx *ctx, int dirfd, const struct de_target *targets,
	      size_t n, const struct de_hooks *hooks,
	      const struct de_opts *opts, struct de_summary *sum);

/*
 * Targets in several directories, for one call: each set's n targets are
 * directly inside its dirfd (the caller's, as for de_remove()).
 */
struct de_set {
	int dirfd;
	const struct de_target *targets;
	size_t n;
};

/*
 * de_remove() for the targets of n sets, as n calls in a row would
 * remove them: reports (with de_report.set) in set order, one limit and
 * one summary for them all.  Where the global schedule is in force (the
 * schedule says so, or DE_SCHED_AUTO and the device's reads were slow:
 * de_note_read()), it is one run: the files of many directories are
 * unlinked in one inode order, as rsync's scattered deletions in a sync
 * need on a slow disk.  Otherwise, or when the sets are on more than one
 * device, it makes the n calls.  Returns as de_remove() does.
 */
int de_remove_sets(de_ctx *ctx, const struct de_set *sets, size_t n,
		   const struct de_hooks *hooks, const struct de_opts *opts,
		   struct de_summary *sum);

/*
 * How many entries de_remove_sets() of the same sets would reach: each
 * target, and everything below a target directory, read as the removal
 * reads (never following a symlink, never entering a mount point or
 * another file system), for an estimate of the work ahead (rsync's
 * --progress).  What hooks would keep is counted too.  Only reads, one
 * directory at a time on the calling thread, with two fds at any depth;
 * a directory moved away while counted ends the count short.  Calls
 * hooks->progress (de_progress.counted) every progress_ms, no other
 * hook.  Sets *count, also when cut short.  Returns 0; -ECANCELED when
 * the progress hook asked to stop; -EINVAL or -ENOMEM.
 */
int de_count(de_ctx *ctx, const struct de_set *sets, size_t n,
	     const struct de_hooks *hooks, uint64_t *count);

/*
 * For a caller that reads directories itself (rsync lists each
 * destination directory of a sync): reading a directory of dirfd's
 * device, of nents entries, took ns nanoseconds.  The engine times the
 * first directories it reads itself the same way (DE_SCHED_AUTO).
 * Returns 1 once the reads of that device tell a disk where the global
 * schedule pays, 0 once they tell one where it does not, -1 while they
 * do not tell yet (the first 8 of at most 4,096 entries decide).  ns 0
 * counts nothing: it only asks.
 */
int de_note_read(de_ctx *ctx, int dirfd, uint64_t ns, size_t nents);

/*
 * Whether a caller that lists dirfd itself, to hand the engine targets,
 * should look up one name in DE_NAMES_AHEAD_EVERY as it lists: 1 where
 * dirfd is on a network or FUSE file system.  Their clients ask for a
 * listing's later pages with the entries' attributes only once they see
 * names being looked up; with them, each unlink is one round trip, not
 * a lookup and a remove.  0 elsewhere, or when fstatfs() fails.
 */
#define DE_NAMES_AHEAD_EVERY	64
int de_names_ahead(int dirfd);

/*
 * For a caller about to list a large directory whole itself (rsync's
 * listing of a destination directory): on ext4, which reads such a
 * directory one block a request in hash order, asks the block device's
 * cache for the directory's blocks in a few long requests first, as the
 * global schedule does for the directories it reads.  Only on a device
 * not known to read fast (de_note_read()) and where this process may
 * read the device (root); it changes nothing, and does nothing for a
 * small directory or on any failure.  Call it again where the listing
 * resumes after a long pause: blocks the cache let go are asked again.
 */
void de_dir_ahead(de_ctx *ctx, int dirfd);

/*
 * For a caller that hands one huge directory's targets to de_remove() in
 * several calls, to bound its memory and the engine's: put the n targets
 * (directly inside dirfd) in an order in which those calls together
 * unlink as one call would: the non-directories first, by inode number
 * where the engine unlinks in inode order on dirfd's filesystem (README,
 * "Heuristics"), then the directories, in their given order (each is a
 * task of its own; sorting them by inode would crowd the workers into one
 * of xfs's allocation groups).  Where the non-directories' entries take
 * more than half a journal transaction's directory blocks (ext4), they
 * go in the directory's own order (it is read again through dirfd) in
 * runs of that many blocks, each run by inode number: a caller should
 * then cut its calls at runs, or make them long, as a call sorts what it
 * holds as one run.  Returns 0, or -EINVAL.
 */
int de_order_targets(de_ctx *ctx, int dirfd, struct de_target *targets,
		     size_t n);

/*
 * For a caller that reads a huge directory in pieces and hands each to
 * de_remove() as it goes: after de_order_targets() on what it holds (the
 * rest of the last piece and the new one), the number of targets to
 * remove now.  The engine fills the holes of each run's inode order with
 * files of the runs after it (README, "Heuristics"), and a call's last
 * runs have none unless they are given: so where it fills, the last few
 * runs of the files are held back, for the next call and as this one's
 * de_opts.fill.  The directories are moved in before them, to go now.
 * Returns n where nothing is held back: the engine would not fill on
 * dirfd's filesystem, or the files are one run.
 */
size_t de_order_cut(de_ctx *ctx, int dirfd, struct de_target *targets,
		    size_t n);

/*
 * From a hook, on the thread that called de_remove(), during a run with
 * max_delete set: count n removals the caller made itself against the
 * limit, so that the engine stops where the caller's own count says it
 * must (rsync counts the rmdir it retries on a directory the engine kept).
 * Returns 0; -EINVAL outside a hook on the calling thread.  Without a
 * max_delete it does nothing.  In the global schedule a batch of entries
 * is removed before their reports go out, so the engine keeps room for
 * one such removal per directory reported in the batch; more may pass
 * the limit by as many.
 */
int de_limit_take(de_ctx *ctx, unsigned long long n);

/*
 * The plan of ctx's last de_remove() or de_remove_sets() call (or of the
 * one in progress, from a hook): the file system it took the start
 * directory for, the schedule and the rule that chose it, what the
 * schedule's probe of the first reads decided, and the workers and
 * heuristics it ran with, as one line without a newline, written to buf
 * as snprintf() writes it.  So that a user can see why a run took the
 * schedule it did (rsync's --debug=del, de-rm --explain).  Returns the
 * line's length, or -EINVAL before the first call.
 */
int de_explain(const de_ctx *ctx, char *buf, size_t len);

/*
 * Fill cfg's pacing for a polite deletion, as rsync's --delete-polite and
 * rsync-rm --polite have it: full speed while no other process waits for
 * the disk, nothing at all for the first 30 s that one does, then 100
 * removals a second in one burst a second while it waits longer; 500 a
 * second in bursts throughout where there is no pressure signal.  rate,
 * when not 0 (--delete-rate), caps every one of these paces.  The reasons
 * are in pace.c.
 */
void de_config_polite(struct de_config *cfg, unsigned rate);

/*
 * Put the calling process, and the threads it starts afterwards (the
 * engine's workers, when called before de_ctx_new()), in the idle I/O
 * class: the block layer (bfq) serves their I/O only when nobody else
 * wants the disk.  A process-wide setting, so the front end asks for it;
 * the engine never changes it on its own.  Returns 0 or a negative errno
 * (-ENOSYS where there are no I/O classes).
 */
int de_polite_io(void);

/*
 * Raise the soft RLIMIT_NOFILE of the process, within its hard limit, to
 * what a context's fd budget can use (DE_FD_LIMIT_WANT).  The global
 * schedule holds an fd for each directory of its window, and a window of
 * a few hundred directories sweeps the inode table densely enough to
 * write it home in long runs; under the usual soft limit of 1,024 a
 * window holds at most about 250.  Process-wide, so the front end asks
 * for it, before de_ctx_new(); not for a process that hands fds above
 * 1,023 to select().  Never lowers the limit.  Returns the soft limit
 * now in force, or a negative errno.
 */
#define DE_FD_LIMIT_WANT	8704
long de_raise_fd_limit(void);

/* The de_type of a stat mode, and of a dirent's d_type (DT_*);
 * DE_T_UNKNOWN when it says none of them. */
enum de_type de_type_of_mode(mode_t mode);
enum de_type de_type_of_dtype(unsigned char d_type);

/* A static English message for a negative (or positive) errno. */
const char *de_strerror(int err);

/* Static names for enums, for messages and tests. */
const char *de_op_name(enum de_op op);
const char *de_result_name(enum de_result r);

#ifdef __cplusplus
}
#endif

#endif /* DELETE_ENGINE_H */

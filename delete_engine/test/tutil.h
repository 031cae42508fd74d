/*
 * tutil.h - helpers shared by the engine tests, and their main() (defined
 * in tutil.c).  Exit codes: 0 pass, 1 fail, 77 skip.
 */
#ifndef DE_TUTIL_H
#define DE_TUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "delete_engine_test.h"

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
		#cond); goto out; } } while (0)

extern char t_base[4096];

/*
 * Each test defines test(): tutil.c's main() makes a fresh temp dir
 * (t_base), runs test with an O_DIRECTORY fd of it, removes the dir and
 * exits with what test returned, T_PASS, T_FAIL or T_SKIP (T_FAIL where
 * the dir cannot be made).
 */
int test(int dfd);

/* Make a fresh temp dir; returns an O_DIRECTORY fd or -1. */
int t_mktemp(void);

/* Remove the temp dir (rm copes with any depth and any mode). */
void t_cleanup(void);

/*
 * Run fn as nobody (uid and gid 65534, in a child, with the temp dir dfd
 * handed to nobody: fn opens it again, as nobody) when root, else as
 * ourselves, so that permission checks apply.  Returns fn's
 * T_PASS/T_FAIL, or T_SKIP when nobody cannot be had.
 */
int t_as_nobody(int dfd, int (*fn)(void));

/*
 * As root, make a loop image of the given size (truncate's syntax) in the
 * temp dir, format it with mkfs (a command that takes the image's path
 * last, e.g. "mkfs.ext4 -q") and mount it on <temp>/mnt.  Returns an
 * O_DIRECTORY fd of the mount, or -1 when that cannot be done here (not
 * root, no such mkfs): the caller skips.  t_umount() undoes it.
 */
extern char t_mnt[sizeof(t_base) + 256];

int t_loop_mount(const char *size, const char *mkfs);

/* Close fd and mount t_loop_mount()'s image again, so that what the file
 * system kept of it in memory is gone.  Returns an fd of the new mount,
 * or -1 (the image is then unmounted). */
int t_remount(int fd);

/*
 * As root, mount a 1 MiB tmpfs on the directory <temp>/path, which must
 * exist: a file system of its own inside the tree.  Returns an
 * O_DIRECTORY fd of the mount, or -1 when that cannot be done here (not
 * root): the caller skips.  t_umount() undoes it.  One mount at a time,
 * as with t_loop_mount(): t_mnt names it.
 */
int t_tmpfs(const char *path);

/* Close fd (if >= 0) and unmount what t_loop_mount() or t_tmpfs()
 * mounted, if anything. */
void t_umount(int fd);

/*
 * Turn a hang into a failure: on SIGALRM (the caller sets the alarm),
 * detach t_mnt if something is mounted there, say "<name>: de_remove()
 * hangs" and exit T_FAIL.
 */
void t_fail_on_alarm(const char *name);

/* rm -rf base/name (to reset between sub-cases). */
void t_cleanup_sub(int dfd, const char *name);

int t_file(int dfd, const char *name);

/*
 * Make each of a NULL-terminated list of paths below dfd, and the
 * directories on their way: an empty file, or a directory where the path
 * ends in '/'.  Returns 0, or -1 at the first that cannot be made.
 */
int t_paths(int dfd, ...);

/* mkdir name in dfd and return an fd for it, or -1. */
int t_dir(int dfd, const char *name);

/* Count entries below dfd/name (name included), without following links. */
long t_count(int dfd, const char *name);

int t_exists(int dfd, const char *path);

/* Collected reports. */
struct t_rep {
	char *path;
	int type, result, op, err;
};

struct t_reps {
	struct t_rep *v;
	size_t n, cap;
};

void t_collect(void *arg, const struct de_report *r);

void t_reps_free(struct t_reps *rs);

struct t_rep *t_find(struct t_reps *rs, const char *path);

/* The result reported for path (enum de_result), or -1 where none was. */
int t_result(struct t_reps *rs, const char *path);

/* Run the engine on one target; returns de_remove's value. */
int t_remove(int dfd, const char *name, unsigned threads, unsigned flags,
	     long long maxdel, struct t_reps *rs, struct de_summary *sum);

/*
 * The ways of running the engine that tests repeat a case in, named in
 * failure messages by t_mode_name[]: T_M_UNORDERED, as the caller's
 * de_config says; T_M_ORDERED, with DE_F_ORDERED; T_M_HOOK, with an
 * enter_dir hook that enters every directory; T_M_LIMIT, with
 * max_delete 1000 (the serial walk; no test's tree is that large);
 * T_M_DISPOSE, with t_dispose_delete (the serial walk); T_M_GLOBAL and
 * T_M_AUTO, in DE_SCHED_GLOBAL and DE_SCHED_AUTO.  All but the last two
 * keep the caller's schedule.
 */
enum t_mode { T_M_UNORDERED, T_M_ORDERED, T_M_HOOK, T_M_LIMIT, T_M_DISPOSE,
	      T_M_GLOBAL, T_M_AUTO, T_M_COUNT };

extern const char *const t_mode_name[T_M_COUNT];

/*
 * Run the engine on dfd/name in mode, with *cfg as the caller made it
 * (threads, flags, max_delete, schedule) and fault (NULL: none) as the
 * context's fault hook, called with fault_arg; reports are collected in
 * rs where it is set.  Returns de_remove's value, or the context's
 * error where it cannot be made.
 */
int t_remove_mode(int dfd, const char *name, enum t_mode mode,
		  const struct de_config *cfg, de_fault_fn fault,
		  void *fault_arg, struct t_reps *rs, struct de_summary *sum);

/*
 * t_remove(dfd, name, 2, flags, -1, rs, NULL) while racer runs on a thread
 * of its own, changing the tree under the engine: started with t_stop
 * clear, it must return once t_stop is set, which is done when the
 * removal has returned.  Returns t_remove's value, or the negated
 * pthread_create() error (never -EIO) when the thread cannot start.
 */
extern atomic_int t_stop;

int t_remove_racing(void *(*racer)(void *), int dfd, const char *name,
		    unsigned flags, struct t_reps *rs);

/* A dispose hook that hands every entry back to the engine to unlink:
 * the run is serial, as with rsync's --backup, and removes all. */
enum de_action t_dispose_delete(void *arg, int dirfd, const char *name,
				const char *relpath, enum de_type type);

/* Seconds on the monotonic clock. */
double t_now(void);

/* order[0..n) = 0..n-1 in a shuffled order, the same for the same seed. */
void t_shuffle(int *order, int n, unsigned seed);

/* How a test runs the global schedule: its window's bounds
 * (de_test_global_window) and filling (de_test_global_fill). */
struct t_window {
	unsigned schedule, flags;	/* de_config's */
	size_t ents, blocks;
	int fill;
};

/* de_remove() of dfd's "tree" as w says, two threads, no limit, fn the
 * fault hook with arg; *sum its summary (zero if it never ran).
 * de_remove()'s return. */
int t_remove_as(int dfd, const struct t_window *w, de_fault_fn fn, void *arg,
		struct de_summary *sum);

/* t_remove_as() under schedule (with flags), windows of one directory
 * block, filling as fill says.  0, or -1 after a line on stderr when the
 * run or any of its removals failed. */
int t_remove_windowed(int dfd, unsigned schedule, unsigned flags, int fill,
		      de_fault_fn fn, void *arg);

/* tree/dD (D < ndirs) holding fK for K = D * nf to D * nf + nf - 1, the
 * files made in the order t_shuffle(seed) gives, so that inode order is
 * not directory order; inos[K] is fK's inode.  0, or -1. */
int t_shuffled_tree(int dfd, int ndirs, int nf, unsigned seed, uint64_t *inos);

/*
 * de_remove(ctx, dfd, t, 1, h, NULL, sum), timed: *took is the seconds
 * it ran.  Returns de_remove's value.
 */
int t_remove_timed(de_ctx *ctx, int dfd, const struct de_target *t,
		   const struct de_hooks *h, struct de_summary *sum,
		   double *took);

/*
 * The arg of hooks that collect the reports and check that enter_dir
 * and leave_dir nest: t_nest_report, t_nest_enter and t_nest_leave take
 * a struct t_nest, or a struct that starts with one.  After the run,
 * depth is 0 and bad 0 if every leave_dir closed an enter_dir.
 */
struct t_nest {
	struct t_reps rs;
	int depth, bad;
};

void t_nest_report(void *arg, const struct de_report *r);

int t_nest_enter(void *arg, const char *rel, struct de_dirent *e, size_t n);

void t_nest_leave(void *arg, const char *rel);

/*
 * Reference canonical order of dfd/name (post-order; reverse rsync sort
 * inside each directory), appended as paths to out.
 */
struct t_names {
	char **v;
	size_t n, cap;
};

void t_names_add(struct t_names *ns, const char *s);

void t_names_free(struct t_names *ns);

struct t_de {
	char name[256];
	int isdir;
};

int t_cmp_desc(const void *a, const void *b);

void t_canon(int dfd, const char *name, const char *path, struct t_names *out);

/* A tree mixing files, dirs, links and byte-order traps, fanout^depth. */
int t_mixed(int dfd, const char *name, int depth, int fanout);

/*
 * The tree of the tests whose hooks keep "keepme": tree/m (t_mixed(), 3
 * deep and 3 wide) and tree/sub holding keepme and x.  Returns 0 or -1.
 */
int t_keepme_tree(int dfd);

/* n empty files in fd, named by fmt (a printf format of the index 0..n-1).
 * Returns 0 or -1. */
int t_files(int fd, const char *fmt, int n);

/*
 * A chain: dfd/name, then levels directories below it, each named sub and
 * each inside the one before.  Every one but the deepest holds files
 * empty files named by fmt (as t_files(); fmt may leave the index out)
 * and whatever each(fd, level, arg) adds to it, where each is set (level
 * 0 is name; each returns the number of directories it made, or -1).
 * Returns the number of directories made, name included, or -1.  Holds
 * one fd at a time, whatever the depth.
 */
int t_chain(int dfd, const char *name, const char *sub, int levels,
	    const char *fmt, int files,
	    int (*each)(int fd, int level, void *arg), void *arg);

#endif

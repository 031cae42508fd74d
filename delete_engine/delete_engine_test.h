/*
 * delete_engine_test.h - what libdelete_engine offers its tests and
 * measuring tools (test/, tools/de-rm) and nothing else: fault injection
 * and overrides of the heuristics.  Not installed; a production caller
 * includes delete_engine.h alone.
 */
#ifndef DELETE_ENGINE_TEST_H
#define DELETE_ENGINE_TEST_H

#include "delete_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Overrides of the per-file-system heuristics (README, "Heuristics"), in
 * de_config.flags, for measuring them against each other.
 */
#define DE_F_NO_INODE_SORT	0x0010u	/* never unlink in inode order */
#define DE_F_INODE_SORT		0x0020u	/* always unlink in inode order */
#define DE_F_NO_SPLIT		0x0080u	/* never split a huge dir across workers */
#define DE_F_SPLIT		0x0100u	/* always split huge dirs */
#define DE_F_NO_P2_GATE		0x0200u	/* every worker unlinks, even in a
					 * narrow tree */
#define DE_F_P2_GATE		0x0400u	/* one unlinker unless the tree is
					 * wide, on any fs */

/* The fault hook's op for starting a worker (name ""): failing it makes
 * the engine run with fewer workers. */
#define DE_OP_THREAD		(DE_OP_CHMOD + 1)

/* The fault hook's op for reopening a directory whose fd was closed to
 * stay within the fd budget (name: the directory's, or ".." when it is
 * reopened through a child): tests count them. */
#define DE_OP_REOPEN		(DE_OP_CHMOD + 2)

/* The fault hook's op for marking a file of a later window changed, to
 * fill a hole in the window's inode order (global.c, "Filling the
 * holes"): tests see which files are touched. */
#define DE_OP_TOUCH		(DE_OP_CHMOD + 3)

/* The fault hook's op for mapping a directory whose blocks are read
 * ahead through the block device (dirahead.c; name: the directory's, "."
 * for de_dir_ahead()'s): tests see which are, and when.  Failing it
 * leaves that one out. */
#define DE_OP_AHEAD		(DE_OP_CHMOD + 4)

/* The fault hook's op before push.c starts writing the inode tables home
 * behind a filled order (name "."): tests see that it starts, once a
 * call.  Failing it leaves the writes to the kernel. */
#define DE_OP_PUSH		(DE_OP_CHMOD + 5)

/*
 * Fault injection: fn is asked (possibly on a worker thread, so it must
 * be thread-safe) before each syscall the engine makes on an entry, and
 * before starting each worker.  A non-zero return is a positive errno
 * that the engine takes as the result of that syscall, which is then not
 * made.  name is the entry's name (no directory part).
 */
typedef int (*de_fault_fn)(void *arg, int op, const char *name);

/* de_ctx_new() with fn (which may be NULL) as the context's fault hook. */
int de_test_ctx_new(de_ctx **out, const struct de_config *cfg,
		    de_fault_fn fn, void *arg);

/* DE_SCHED_GLOBAL's window: at most ents entries and blocks directory
 * blocks (0: the defaults, global.c), so that tests see several. */
void de_test_global_window(de_ctx *ctx, size_t ents, size_t blocks);

/* Whether inode orders have their holes filled (order.c
 * de__fill_runs_at: a global window's, and the runs of a huge directory's,
 * policy.c de__want_fill): 1 always, -1 never, 0 as planned (on ext4
 * with a journal), so that tests on tmpfs see it; 2 as 1 without reading
 * the next directories' blocks ahead (dirahead.c).  Never under
 * DE_SCHED_DIRS or in ordered runs. */
void de_test_global_fill(de_ctx *ctx, int fill);

/*
 * Plan a call as de_remove() would for a start directory on a file
 * system of statfs type fstype (0: one not listed), without running it,
 * and describe the plan as de_explain() does.  Returns the line's length
 * or a negative errno.
 */
int de_test_plan(de_ctx *ctx, long fstype, const struct de_hooks *hooks,
		 const struct de_opts *opts, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* DELETE_ENGINE_TEST_H */

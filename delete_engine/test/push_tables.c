/*
 * push_tables: where an inode order's holes are filled, push.c's thread
 * asks for the inode tables' write-back while the call unlinks, and is
 * gone when the call returns.  What that saves is measured on the disk
 * model (docs/BENCHMARKS.md, "Writing the inode tables home"); this pins
 * when the thread runs, and that it changes nothing removed.
 *
 * On a loop-mounted ext4 (exit 77 without root or mkfs.ext4), tree/ of
 * 3 directories of 4,200 files made shuffled, removed by de_remove() under
 * DE_SCHED_GLOBAL, filling as each case says; the fault hook counts
 * DE_OP_PUSH, and at each unlink the threads of this process.  The 100th
 * unlink waits 0.6 s, so that the thread asks at least twice.
 *   - filling, tree/ given through an O_PATH descriptor (as rsync
 *     gives it): DE_OP_PUSH once, a thread more while the files go than
 *     when it was asked for, none more when de_remove() returns, tree/
 *     gone;
 *   - two calls on one context (tree/ in two halves): once each;
 *   - an ordered run (DE_F_ORDERED: the batch walk): as filling;
 *   - 3 directories of 1,000 (orders under DE__PUSH_MIN_FILES): no
 *     DE_OP_PUSH;
 *   - filling off, or a paced run (de_config.rate): no DE_OP_PUSH (the
 *     thread starts only after it), tree/ gone;
 *   - the hook failing DE_OP_PUSH: no thread more, tree/ gone.
 */
#include "tutil.h"

#include <dirent.h>

#define ND	3
#define NF	4200	/* over DE__PUSH_MIN_FILES (4,096) a directory */
#define NSMALL	1000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int pushes, unlinks, refuse, at_push, most, after;

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int hook(void *arg, int op, const char *name)
{
	int n, rc = 0;

	(void)arg;
	(void)name;
	if (op != DE_OP_PUSH && op != DE_OP_UNLINK)
		return 0;
	n = threads();
	pthread_mutex_lock(&mu);
	if (op == DE_OP_PUSH) {
		pushes++;
		at_push = n;
		rc = refuse ? EIO : 0;
	} else if (n > most) {
		most = n;
	}
	n = ++unlinks == 100 && op == DE_OP_UNLINK;
	pthread_mutex_unlock(&mu);
	if (n)
		usleep(600000);
	return rc;
}

/* de_remove() of the targets t[0..calls) of dfd, one a call, filling as
 * fill says, paced at rate (0: not), with flags; 0 or -1. */
static int remove_in(int dfd, const struct de_target *t, int calls, int fill,
		     unsigned rate, unsigned flags)
{
	struct de_config cfg = { .threads = 1, .max_delete = -1,
				 .schedule = DE_SCHED_GLOBAL, .rate = rate,
				 .flags = flags };
	struct de_summary sum;
	de_ctx *ctx;
	int i, rc = 0;

	pushes = unlinks = at_push = most = 0;
	if (de_test_ctx_new(&ctx, &cfg, hook, NULL))
		return -1;
	de_test_global_fill(ctx, fill);
	for (i = 0; i < calls && !rc; i++) {
		rc = de_remove(ctx, dfd, &t[i], 1, NULL, NULL, &sum);
		if (rc || sum.failed)
			fprintf(stderr, "call %d: rc %d, %lu failed\n", i, rc,
				(unsigned long)sum.failed);
		rc = rc || sum.failed ? -1 : 0;
	}
	/* The pool's threads are still there (and a sanitizer's).  A
	 * thread joined may still be listed for a moment: its exit wakes
	 * the join before it leaves /proc/self/task.  One not joined stays
	 * listed. */
	for (i = 0; pushes && i < 100 && threads() > at_push; i++)
		usleep(10000);
	after = threads();
	de_ctx_free(ctx);
	return rc;
}

static uint64_t inos[ND * NF];

static int make_tree(int wd)
{
	return t_shuffled_tree(wd, ND, NF, 7, inos);
}

int test(int dfd)
{
	const struct de_target tree = { .name = "tree" };
	const struct de_target halves[2] = { { .name = "d0" },
					     { .name = "d1" } };
	int ret = T_FAIL, wd, td;

	(void)dfd;	/* the tree goes on the ext4, in the temp dir's mnt */
	wd = t_loop_mount("128M", "mkfs.ext4 -q -F -b 4096 -N 40000");
	if (wd < 0) {
		ret = T_SKIP;
		goto out;
	}

	/* Through an O_PATH descriptor, as rsync's: it takes no ioctl. */
	CHECK(make_tree(wd) == 0);
	CHECK((td = openat(wd, ".", O_PATH | O_DIRECTORY)) >= 0);
	CHECK(remove_in(td, &tree, 1, 1, 0, 0) == 0);
	close(td);
	fprintf(stderr, "filling: %d asked, threads %d then %d, after %d\n",
		pushes, at_push, most, after);
	CHECK(pushes == 1 && most == at_push + 1 && after == at_push);
	CHECK(!t_exists(wd, "tree"));

	CHECK(make_tree(wd) == 0);
	CHECK((td = openat(wd, "tree", O_RDONLY | O_DIRECTORY)) >= 0);
	CHECK(remove_in(td, halves, 2, 1, 0, 0) == 0);
	close(td);
	CHECK(pushes == 2 && after == at_push);
	CHECK(!t_exists(wd, "tree/d0") && !t_exists(wd, "tree/d1"));
	CHECK(t_count(wd, "tree/d2") == 1 + NF);
	CHECK(remove_in(wd, &tree, 1, 1, 0, 0) == 0);

	/* Orders of fewer files than DE__PUSH_MIN_FILES start nothing. */
	CHECK(t_shuffled_tree(wd, ND, NSMALL, 7, inos) == 0);
	CHECK(remove_in(wd, &tree, 1, 1, 0, 0) == 0);
	CHECK(pushes == 0 && !t_exists(wd, "tree"));

	/* An ordered run: the batch walk's batches (batch.c). */
	CHECK(make_tree(wd) == 0);
	CHECK(remove_in(wd, &tree, 1, 1, 0, DE_F_ORDERED) == 0);
	CHECK(pushes == 1 && most == at_push + 1 && after == at_push);
	CHECK(!t_exists(wd, "tree"));

	/* The thread starts only after DE_OP_PUSH: none asked, none ran. */
	CHECK(make_tree(wd) == 0);
	CHECK(remove_in(wd, &tree, 1, -1, 0, 0) == 0);
	CHECK(pushes == 0 && !t_exists(wd, "tree"));

	CHECK(make_tree(wd) == 0);
	CHECK(remove_in(wd, &tree, 1, 1, 1000000, 0) == 0);
	CHECK(pushes == 0 && !t_exists(wd, "tree"));

	CHECK(make_tree(wd) == 0);
	refuse = 1;
	CHECK(remove_in(wd, &tree, 1, 1, 0, 0) == 0);
	CHECK(pushes == 1 && most == at_push && !t_exists(wd, "tree"));
	ret = T_PASS;
out:
	t_cleanup();
	return ret;
}

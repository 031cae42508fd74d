/*
 * window_fds: the global schedule's window takes as many directories as
 * the fds allow (half the context's fd budget, half of what
 * RLIMIT_NOFILE leaves), not a fixed number, and de_raise_fd_limit()
 * raises the soft limit to DE_FD_LIMIT_WANT within the hard one.
 *
 * 600 directories of one file each, the files made in a shuffled order
 * so that inode order is not directory order; the window's blocks and
 * entries bounds set far above the tree (de_test_global_window), so that
 * only the fds can cut it.  The unlinks, read through the fault hook:
 *   - soft limit as de_raise_fd_limit() leaves it (when the hard limit
 *     allows 2,500): one window, so one ascending inode order;
 *   - soft limit 1,024: a budget of about 500 fds, windows of about 250
 *     directories: 3 windows, each ascending (2 to 4 runs);
 *   - soft limit 64: windows of at most 15 directories (at least 40
 *     runs).
 * Filling forced on (on ext4, order.c de__fill_runs_at: the next window read
 * ahead where the window's bounds leave room) changes none of it: a
 * window bound by its fds keeps them all.
 * Each way everything is removed.
 * de_raise_fd_limit() never lowers a limit above DE_FD_LIMIT_WANT, and
 * never passes the hard limit.
 */
#include "tutil.h"

#include <sys/resource.h>
#include <sys/wait.h>

#define NDIRS	600

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t inos[NDIRS];		/* file k's inode */
static int seen[NDIRS];			/* the unlinked files, in order */
static size_t nseen;

static int record(void *arg, int op, const char *name)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	if (op == DE_OP_UNLINK && name[0] == 'f' && nseen < NDIRS)
		seen[nseen++] = atoi(name + 1);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* The ascending runs of inodes in what was unlinked. */
static size_t runs(void)
{
	size_t i, n = 0;

	for (i = 0; i < nseen; i++)
		if (i == 0 || inos[seen[i]] < inos[seen[i - 1]])
			n++;
	return n;
}

/* Remove tree with the global schedule under soft limit soft (0: as it
 * is), filling as fill says (de_test_global_fill); returns the runs, or 0
 * when the removal failed. */
static size_t remove_under(int dfd, rlim_t soft, int fill)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .schedule = DE_SCHED_GLOBAL };
	struct de_target t = { .name = "tree" };
	struct de_summary sum;
	struct rlimit rl, low;
	de_ctx *ctx;
	int rc;

	if (t_shuffled_tree(dfd, NDIRS, 1, 11, inos) ||
	    getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	low = rl;
	if (soft)
		low.rlim_cur = soft;
	if (setrlimit(RLIMIT_NOFILE, &low))
		return 0;
	nseen = 0;
	rc = de_test_ctx_new(&ctx, &cfg, record, NULL);
	if (rc == 0) {
		de_test_global_window(ctx, 1u << 20, 1u << 20);
		de_test_global_fill(ctx, fill);
		rc = de_remove(ctx, dfd, &t, 1, NULL, NULL, &sum);
		de_ctx_free(ctx);
	}
	(void)setrlimit(RLIMIT_NOFILE, &rl);
	if (rc || t_exists(dfd, "tree") || nseen != NDIRS ||
	    sum.removed[DE_T_FILE] != NDIRS || sum.removed[DE_T_DIR] != NDIRS + 1) {
		fprintf(stderr, "soft limit %lu: rc %d, %zu unlinked\n",
			(unsigned long)soft, rc, nseen);
		return 0;
	}
	return runs();
}

int test(int dfd)
{
	struct rlimit rl, was;
	long got;
	size_t n;
	int ret = T_FAIL;

	CHECK(getrlimit(RLIMIT_NOFILE, &was) == 0);

	/* Raised to what the budget can use, within the hard limit. */
	rl = was;
	rl.rlim_cur = rl.rlim_max < 1024 ? rl.rlim_max : 1024;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	got = de_raise_fd_limit();
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	CHECK(got == (long)rl.rlim_cur);
	CHECK(rl.rlim_cur == (rl.rlim_max != RLIM_INFINITY &&
			      rl.rlim_max < DE_FD_LIMIT_WANT ?
			      rl.rlim_max : DE_FD_LIMIT_WANT));
	/* Never lowered, never past the hard limit. */
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > DE_FD_LIMIT_WANT + 10) {
		rl.rlim_cur = DE_FD_LIMIT_WANT + 10;
		CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
		CHECK(de_raise_fd_limit() == DE_FD_LIMIT_WANT + 10);
	}
	/* A hard limit below DE_FD_LIMIT_WANT: up to it (in a child: a
	 * lowered hard limit stays lowered). */
	{
		pid_t pid = fork();
		int status;

		CHECK(pid >= 0);
		if (pid == 0) {
			struct rlimit h = { 60, 100 };

			_exit(setrlimit(RLIMIT_NOFILE, &h) == 0 &&
			      de_raise_fd_limit() == 100 &&
			      getrlimit(RLIMIT_NOFILE, &h) == 0 &&
			      h.rlim_cur == 100 && h.rlim_max == 100 ? 0 : 1);
		}
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK(setrlimit(RLIMIT_NOFILE, &was) == 0);

	/* One window when the fds allow the whole tree. */
	if (was.rlim_max == RLIM_INFINITY || was.rlim_max >= 2500) {
		rl = was;
		rl.rlim_cur = 2500;
		n = remove_under(dfd, rl.rlim_cur, -1);
		fprintf(stderr, "soft limit 2500: %zu runs\n", n);
		CHECK(n == 1);
		n = remove_under(dfd, rl.rlim_cur, 1);
		fprintf(stderr, "soft limit 2500, filling: %zu runs\n", n);
		CHECK(n == 1);
	} else {
		fprintf(stderr, "hard limit %lu: no room for one window\n",
			(unsigned long)was.rlim_max);
	}
	/* About 250 directories a window under 1,024. */
	if (was.rlim_max == RLIM_INFINITY || was.rlim_max >= 1024) {
		n = remove_under(dfd, 1024, -1);
		fprintf(stderr, "soft limit 1024: %zu runs\n", n);
		CHECK(n >= 2 && n <= 4);
		n = remove_under(dfd, 1024, 1);
		fprintf(stderr, "soft limit 1024, filling: %zu runs\n", n);
		CHECK(n >= 2 && n <= 4);
	}
	/* At most 15 under 64. */
	n = remove_under(dfd, 64, -1);
	fprintf(stderr, "soft limit 64: %zu runs\n", n);
	CHECK(n >= NDIRS / 15);
	n = remove_under(dfd, 64, 1);
	fprintf(stderr, "soft limit 64, filling: %zu runs\n", n);
	CHECK(n >= NDIRS / 15 && n <= NDIRS / 10);
	ret = T_PASS;
out:
	(void)setrlimit(RLIMIT_NOFILE, &was);
	return ret;
}

/* fd_pressure: the caller itself holds most of a small RLIMIT_NOFILE (as
 * rsync does: its sockets, logs and the target's directory), and the
 * engine still removes a deep and wide tree completely, in every mode:
 * its fd budget counts the fds really free, it runs fewer threads when
 * they are short, and on EMFILE it closes held fds or waits for one;
 * in the global schedule too (forced, as on a slow disk). */
#include "tutil.h"
#include <sys/resource.h>

static int build(int dfd, const char *name)
{
	int top = t_dir(dfd, name), fd, i, n;
	char w[16];

	if (top < 0)
		return -1;
	fd = dup(top);
	for (i = 0; i < 200 && fd >= 0; i++) {
		if (t_file(fd, "f")) {
			close(fd);
			fd = -1;
			break;
		}
		n = t_dir(fd, "d");
		close(fd);
		fd = n;
	}
	if (fd < 0) {
		close(top);
		return -1;
	}
	close(fd);
	for (i = 0; i < 60; i++) {
		snprintf(w, sizeof(w), "w%02d", i);
		fd = t_dir(top, w);
		if (fd < 0 || t_file(fd, "g") || t_mixed(fd, "m", 2, 2)) {
			if (fd >= 0)
				close(fd);
			close(top);
			return -1;
		}
		close(fd);
	}
	close(top);
	return 0;
}

/*
 * Remove the tree under a soft limit of limit fds with exactly spare of
 * them free: the test holds the rest.  Counted, not assumed from the
 * lowest free fd: a test can inherit fds above it (a shell's saved fd
 * 10, make's jobserver), and each one it missed left the engine one fd
 * fewer than the case says.
 */
static int one(int dfd, rlim_t limit, int spare, unsigned flags, long long maxdel,
	       unsigned sched)
{
	struct de_config cfg = { .threads = 2, .flags = flags, .max_delete = maxdel,
				 .schedule = sched };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_hooks h = { .report = t_collect };
	de_ctx *ctx = NULL;
	struct rlimit old, rl;
	struct de_summary sum;
	struct t_reps rs = { 0 };
	size_t k;
	int held[64], nheld = 0, hold = 0, rc, ret = -1, i;

	CHECK(build(dfd, "tree") == 0);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	rl = old;
	rl.rlim_cur = limit;
	for (i = 0; i < (int)limit; i++)
		hold += fcntl(i, F_GETFD) < 0;
	hold -= spare;
	CHECK(hold >= 0 && hold <= 64);
	/* Use up all but spare fds, as a busy caller would: dup() takes
	 * the lowest free ones, all below the limit. */
	while (nheld < hold && (held[nheld] = dup(0)) >= 0)
		nheld++;
	CHECK(nheld == hold);
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	h.arg = &rs;
	rc = de_ctx_new(&ctx, &cfg);
	if (rc == 0)
		rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	de_ctx_free(ctx);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	if (rc != 0 || sum.failed || t_exists(dfd, "tree"))
		fprintf(stderr, "limit %lu spare %d flags %#x schedule %u: rc %d, failed %llu\n",
			(unsigned long)limit, spare, flags, sched, rc,
			(unsigned long long)sum.failed);
	for (k = 0; k < rs.n; k++)
		if (rs.v[k].result != DE_R_REMOVED)
			fprintf(stderr, "  %s: %s %s: %s\n", rs.v[k].path, de_result_name(rs.v[k].result),
				de_op_name(rs.v[k].op), strerror(rs.v[k].err));
	t_reps_free(&rs);
	CHECK(rc == 0 && sum.failed == 0);
	CHECK(!t_exists(dfd, "tree"));
	ret = 0;
out:
	setrlimit(RLIMIT_NOFILE, &old);
	for (i = 0; i < nheld; i++)
		close(held[i]);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL;

	/* 16 fds, 6 of them free (then 4, then 3). */
	CHECK(one(dfd, 16, 6, 0, -1, 0) == 0);
	CHECK(one(dfd, 16, 6, DE_F_ORDERED, -1, 0) == 0);
	CHECK(one(dfd, 16, 4, 0, -1, 0) == 0);
	/* Serial (the --max-delete and --backup mode).  The calling thread
	 * removes a directory with three fds: the target's, the
	 * directory's, and its parent's, reopened as "..".  With 3 free,
	 * that open meets EMFILE whenever a scanning thread or an idle
	 * held fd has the third; it must shed or wait, not fail (with 2
	 * free, the deep entries fail with EMFILE, as they must). */
	CHECK(one(dfd, 16, 4, 0, 1000000, 0) == 0);
	CHECK(one(dfd, 16, 3, 0, 1000000, 0) == 0);
	/* The global schedule, as on a slow disk: the unordered window, and
	 * the batch walk (ordered, a limit), whose checks of where each
	 * directory is come before its pins, and whose runs that cannot be
	 * pinned go entry by entry. */
	CHECK(one(dfd, 16, 4, 0, -1, DE_SCHED_GLOBAL) == 0);
	CHECK(one(dfd, 16, 4, DE_F_ORDERED, -1, DE_SCHED_GLOBAL) == 0);
	CHECK(one(dfd, 16, 3, DE_F_ORDERED, -1, DE_SCHED_GLOBAL) == 0);
	CHECK(one(dfd, 16, 3, 0, 1000000, DE_SCHED_GLOBAL) == 0);
	ret = T_PASS;
out:
	return ret;
}

/* fd_pressure: the caller itself holds most of a small RLIMIT_NOFILE (as
 * rsync does: its sockets, logs and the target's directory), and the
 * engine still removes a deep and wide tree completely, in every mode:
 * its fd budget counts the fds really free, it runs fewer threads when
 * they are short, and on EMFILE it closes held fds or waits for one. */
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

static int one(int dfd, rlim_t limit, int hold, unsigned flags, long long maxdel)
{
	struct rlimit old, rl;
	struct de_summary sum;
	struct t_reps rs = { 0 };
	size_t k;
	int held[64], nheld = 0, rc, ret = -1, i;

	CHECK(build(dfd, "tree") == 0);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	rl = old;
	rl.rlim_cur = limit;
	/* Use up all but a few fds, as a busy caller would. */
	while (nheld < hold && nheld < 64 && (held[nheld] = dup(0)) >= 0)
		nheld++;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	rc = t_remove(dfd, "tree", 2, flags, maxdel, &rs, &sum);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	if (rc != 0 || sum.failed || t_exists(dfd, "tree"))
		fprintf(stderr, "limit %lu hold %d flags %#x: rc %d, failed %llu\n",
			(unsigned long)limit, hold, flags, rc,
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
	int ret = T_FAIL, lowest;

	/* The lowest free fd tells how many the test itself holds. */
	lowest = dup(0);
	CHECK(lowest >= 0);
	close(lowest);
	/* 16 fds, the caller holding all but 6 (then all but 4). */
	CHECK(one(dfd, 16, 16 - 6 - lowest, 0, -1) == 0);
	CHECK(one(dfd, 16, 16 - 6 - lowest, DE_F_ORDERED, -1) == 0);
	CHECK(one(dfd, 16, 16 - 4 - lowest, 0, -1) == 0);
	/* Serial (the --max-delete and --backup mode). */
	CHECK(one(dfd, 16, 16 - 4 - lowest, 0, 1000000) == 0);
	ret = T_PASS;
out:
	return ret;
}

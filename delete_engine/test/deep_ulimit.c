/* deep_ulimit: a 3,000-level chain is removed under RLIMIT_NOFILE 64 (fds
 * are closed and reopened within a budget), also in ordered mode. */
#include "tutil.h"
#include <sys/resource.h>

#define LEVELS 3000

static int build(int dfd, const char *name)
{
	int fd = t_dir(dfd, name), i;

	if (fd < 0)
		return -1;
	for (i = 0; i < LEVELS; i++) {
		int n;

		if (t_file(fd, "a") || t_file(fd, "b")) {
			close(fd);
			return -1;
		}
		n = t_dir(fd, "d");
		close(fd);
		fd = n;
		if (fd < 0)
			return -1;
	}
	close(fd);
	return 0;
}

int test(int dfd)
{
	struct rlimit rl = { 64, 64 };
	struct de_summary sum;
	int ret = T_FAIL, rc;

	CHECK(build(dfd, "one") == 0);
	CHECK(build(dfd, "two") == 0);
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	rc = t_remove(dfd, "one", 2, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "one"));
	CHECK(sum.removed[DE_T_DIR] == LEVELS + 1);
	rc = t_remove(dfd, "two", 2, DE_F_ORDERED, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "two"));
	CHECK(sum.removed_total == 3 * LEVELS + 1);
	ret = T_PASS;
out:
	return ret;
}

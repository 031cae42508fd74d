/* deep: a 10,000-level chain (far beyond PATH_MAX), built with mkdirat
 * relative fds, is removed completely; every level reports. */
#include "tutil.h"

#define LEVELS 10000

int main(void)
{
	struct de_summary sum;
	int ret = T_FAIL, dfd, fd, i, rc;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	fd = t_dir(dfd, "deep");
	CHECK(fd >= 0);
	for (i = 0; i < LEVELS; i++) {
		int n;

		if (t_file(fd, "f")) {
			close(fd);
			goto out;
		}
		n = t_dir(fd, "dd");
		close(fd);
		fd = n;
		CHECK(fd >= 0);
	}
	close(fd);
	rc = t_remove(dfd, "deep", 2, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "deep"));
	CHECK(sum.removed[DE_T_DIR] == LEVELS + 1);
	CHECK(sum.removed[DE_T_FILE] == LEVELS);
	ret = T_PASS;
out:
	close(dfd);
	t_cleanup();
	return ret;
}

/* deep: a 10,000-level chain (far beyond PATH_MAX), built with mkdirat
 * relative fds, is removed completely, unordered and ordered (which
 * reports the deepest file first and the top directory last). */
#include "tutil.h"

#define LEVELS 10000

int main(void)
{
	struct de_summary sum;
	struct t_reps rs = { 0 };
	int ret = T_FAIL, dfd, fd, i, rc, pass;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	for (pass = 0; pass < 2; pass++) {
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
		rc = t_remove(dfd, "deep", 2, pass ? DE_F_ORDERED : 0, -1,
			      pass ? &rs : NULL, &sum);
		CHECK(rc == 0);
		CHECK(!t_exists(dfd, "deep"));
		CHECK(sum.removed[DE_T_DIR] == LEVELS + 1);
		CHECK(sum.removed[DE_T_FILE] == LEVELS);
	}
	CHECK(rs.n == 2 * LEVELS + 1);
	CHECK(!strcmp(rs.v[rs.n - 1].path, "deep"));
	CHECK(rs.v[0].type == DE_T_DIR && rs.v[1].type == DE_T_FILE);
	CHECK(strlen(rs.v[1].path) == 5 + 3 * (LEVELS - 1) + 1);
	ret = T_PASS;
out:
	t_reps_free(&rs);
	close(dfd);
	t_cleanup();
	return ret;
}

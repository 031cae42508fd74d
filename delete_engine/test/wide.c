/* wide: 100 directories x 200 files, each with a nested subdirectory, all
 * removed by 2 threads; counts are exact. */
#include "tutil.h"

int test(int dfd)
{
	struct de_summary sum;
	int ret = T_FAIL, i, rc;
	char name[64];

	CHECK(mkdirat(dfd, "wide", 0755) == 0);
	for (i = 0; i < 100; i++) {
		int d, s;

		snprintf(name, sizeof(name), "wide/d%03d", i);
		d = t_dir(dfd, name);
		CHECK(d >= 0);
		if (t_files(d, "f%03d", 200)) {
			close(d);
			goto out;
		}
		s = t_dir(d, "nested");
		close(d);
		CHECK(s >= 0);
		rc = t_file(s, "x");
		close(s);
		CHECK(rc == 0);
	}
	rc = t_remove(dfd, "wide", 2, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "wide"));
	CHECK(sum.removed[DE_T_FILE] == 100 * 201);
	CHECK(sum.removed[DE_T_DIR] == 1 + 100 * 2);
	CHECK(sum.failed == 0 && sum.not_empty == 0);
	ret = T_PASS;
out:
	return ret;
}

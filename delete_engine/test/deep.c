/* deep: a 10,000-level chain (far beyond PATH_MAX), built with mkdirat
 * relative fds, is removed completely, unordered and ordered (which
 * reports the deepest file first and the top directory last). */
#include "tutil.h"

#define LEVELS 10000

int test(int dfd)
{
	struct de_summary sum;
	struct t_reps rs = { 0 };
	int ret = T_FAIL, rc, pass;

	for (pass = 0; pass < 2; pass++) {
		/* Each but the deepest holds a file "f" and the next, "dd". */
		CHECK(t_chain(dfd, "deep", "dd", LEVELS, "f", 1, NULL, NULL) ==
		      LEVELS + 1);
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
	return ret;
}

/* ordered: with DE_F_ORDERED and 2 threads, reports arrive exactly in
 * canonical order (post-order, reverse rsync sort per directory), for a
 * tree larger than the read-ahead window; and DE_F_PLAIN_ORDER sorts by
 * bytes regardless of type. */
#include "tutil.h"

int test(int dfd)
{
	struct t_names ref = { 0 };
	struct t_reps rs = { 0 };
	struct de_summary sum;
	int ret = T_FAIL, rc;
	size_t i;

	CHECK(t_mixed(dfd, "tree", 4, 5) == 0);	/* 781 dirs */
	t_canon(dfd, "tree", "tree", &ref);
	rc = t_remove(dfd, "tree", 2, DE_F_ORDERED, -1, &rs, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(rs.n == ref.n);
	for (i = 0; i < rs.n; i++) {
		if (strcmp(rs.v[i].path, ref.v[i])) {
			fprintf(stderr, "at %zu: got %s want %s\n", i,
				rs.v[i].path, ref.v[i]);
			goto out;
		}
		CHECK(rs.v[i].result == DE_R_REMOVED);
	}
	t_reps_free(&rs);
	/* Plain byte order: "D\xc3.." > "1" etc, dirs mixed with files. */
	CHECK(t_mixed(dfd, "p", 1, 2) == 0);
	rc = t_remove(dfd, "p", 2, DE_F_ORDERED | DE_F_PLAIN_ORDER, -1, &rs,
		      &sum);
	CHECK(rc == 0);
	for (i = 1; i < rs.n; i++) {
		const char *a = rs.v[i - 1].path, *b = rs.v[i].path;
		/* Siblings directly under p/ must be in descending order. */
		if (!strncmp(a, "p/", 2) && !strncmp(b, "p/", 2) &&
		    !strchr(a + 2, '/') && !strchr(b + 2, '/'))
			CHECK(strcmp(a, b) > 0);
	}
	ret = T_PASS;
out:
	t_reps_free(&rs);
	t_names_free(&ref);
	return ret;
}

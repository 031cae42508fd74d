/* max_delete: with 2 threads, exactly N entries are removed and they are
 * the first N in canonical order; the rest are reported skipped and left
 * in place; de_remove returns -EDQUOT.  Also in a dry run. */
#include "tutil.h"

static int one(int dfd, long long n, unsigned flags)
{
	struct t_names ref = { 0 };
	struct t_reps rs = { 0 };
	struct de_summary sum;
	int ret = -1, rc;
	long before;
	size_t i;

	if (t_mixed(dfd, "tree", 3, 4))
		return -1;
	before = t_count(dfd, "tree");
	t_canon(dfd, "tree", "tree", &ref);
	rc = t_remove(dfd, "tree", 2, flags, n, &rs, &sum);
	CHECK(rc == -EDQUOT);
	CHECK(rs.n == ref.n);
	CHECK(sum.removed_total == (uint64_t)n);
	CHECK(sum.skipped == ref.n - (uint64_t)n);
	for (i = 0; i < rs.n; i++) {
		CHECK(!strcmp(rs.v[i].path, ref.v[i]));
		CHECK(rs.v[i].result == ((long long)i < n ? DE_R_REMOVED :
					 DE_R_SKIPPED));
	}
	if (flags & DE_F_DRY_RUN)
		CHECK(t_count(dfd, "tree") == before);
	else
		CHECK(t_count(dfd, "tree") == before - n);
	for (i = n; i < ref.n; i++)
		CHECK(t_exists(dfd, ref.v[i]));
	ret = 0;
out:
	t_reps_free(&rs);
	t_names_free(&ref);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int main(void)
{
	int ret = T_FAIL, dfd;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	CHECK(one(dfd, 37, 0) == 0);
	CHECK(one(dfd, 1, 0) == 0);
	CHECK(one(dfd, 0, 0) == 0);
	CHECK(one(dfd, 200, DE_F_DRY_RUN) == 0);
	ret = T_PASS;
out:
	close(dfd);
	t_cleanup();
	return ret;
}

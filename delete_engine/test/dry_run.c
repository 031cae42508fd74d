/* dry_run: a dry run removes nothing and reports every entry as "would
 * remove", in the same order as the real run that follows. */
#include "tutil.h"

int test(int dfd)
{
	struct t_reps dry = { 0 }, real = { 0 };
	struct de_summary sum;
	int ret = T_FAIL, rc;
	long before;
	size_t i;

	CHECK(t_mixed(dfd, "tree", 3, 4) == 0);
	before = t_count(dfd, "tree");
	rc = t_remove(dfd, "tree", 2, DE_F_DRY_RUN, -1, &dry, &sum);
	CHECK(rc == 0);
	CHECK(t_count(dfd, "tree") == before);
	CHECK((long)dry.n == before);
	CHECK((long)sum.removed_total == before);
	rc = t_remove(dfd, "tree", 2, DE_F_ORDERED, -1, &real, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(real.n == dry.n);
	for (i = 0; i < dry.n; i++) {
		CHECK(!strcmp(dry.v[i].path, real.v[i].path));
		CHECK(dry.v[i].result == DE_R_REMOVED);
	}
	ret = T_PASS;
out:
	t_reps_free(&dry);
	t_reps_free(&real);
	return ret;
}

/* max_delete: with 2 threads, exactly N entries are removed and they are
 * the first N in canonical order; the rest are reported skipped and left
 * in place; de_remove returns -EDQUOT.  Also in a dry run.  A report hook
 * that counts removals of its own with de_limit_take() shortens the run
 * by as many; outside a run, de_limit_take() is refused. */
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

struct taker {
	de_ctx *ctx;
	struct t_reps rs;
	size_t at;		/* take one at this report */
	int rc;
};

static void take_report(void *arg, const struct de_report *r)
{
	struct taker *tk = arg;

	t_collect(&tk->rs, r);
	if (tk->rs.n == tk->at)
		tk->rc = de_limit_take(tk->ctx, 1);
}

/* The caller's own removal after report `at` costs the engine one. */
static int taken(int dfd, long long n, size_t at, unsigned flags)
{
	struct de_config cfg = { .threads = 2, .flags = flags, .max_delete = n };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct t_names ref = { 0 };
	struct taker tk = { .at = at, .rc = 1 };
	struct de_hooks h;
	struct de_summary sum;
	int ret = -1, rc;
	size_t i;

	memset(&h, 0, sizeof(h));
	h.arg = &tk;
	h.report = take_report;
	if (t_mixed(dfd, "tree", 3, 4))
		return -1;
	t_canon(dfd, "tree", "tree", &ref);
	CHECK(de_ctx_new(&tk.ctx, &cfg) == 0);
	CHECK(de_limit_take(tk.ctx, 1) == -EINVAL);
	rc = de_remove(tk.ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(rc == -EDQUOT);
	CHECK(tk.rc == 0);
	CHECK(de_limit_take(tk.ctx, 1) == -EINVAL);
	CHECK(tk.rs.n == ref.n);
	CHECK(sum.removed_total == (uint64_t)n - 1);
	for (i = 0; i < tk.rs.n; i++) {
		CHECK(!strcmp(tk.rs.v[i].path, ref.v[i]));
		CHECK(tk.rs.v[i].result == ((long long)i < n - 1 ? DE_R_REMOVED :
					    DE_R_SKIPPED));
	}
	for (i = n - 1; i < ref.n; i++)
		CHECK(t_exists(dfd, ref.v[i]));
	ret = 0;
out:
	de_ctx_free(tk.ctx);
	t_reps_free(&tk.rs);
	t_names_free(&ref);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL;

	CHECK(one(dfd, 37, 0) == 0);
	CHECK(one(dfd, 1, 0) == 0);
	CHECK(one(dfd, 0, 0) == 0);
	CHECK(one(dfd, 200, DE_F_DRY_RUN) == 0);
	CHECK(taken(dfd, 37, 5, 0) == 0);
	CHECK(taken(dfd, 37, 5, DE_F_DRY_RUN) == 0);
	ret = T_PASS;
out:
	return ret;
}

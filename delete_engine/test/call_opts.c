/* call_opts: one context serves calls with different per-call options
 * (struct de_opts): a dry run removes nothing and says so, a limit stops
 * exactly there (-EDQUOT), and the next call without options runs
 * unlimited and unordered again, on the same pool. */
#include "tutil.h"

#define FILES 10

/* Run one call on dfd/tree; returns de_remove()'s value. */
static int call(de_ctx *ctx, int dfd, const struct de_opts *o,
		struct t_reps *rs, struct de_summary *sum)
{
	struct de_hooks h = { .arg = rs, .report = t_collect };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };

	return de_remove(ctx, dfd, &t, 1, &h, o, sum);
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1 };
	struct de_opts dry = { .flags = DE_F_DRY_RUN, .max_delete = -1 };
	struct de_opts lim = { .flags = 0, .max_delete = 3 };
	struct de_summary sum;
	struct t_reps rs = { 0 };
	de_ctx *ctx = NULL;
	int ret = T_FAIL, fd = -1;
	size_t i;

	fd = t_dir(dfd, "tree");
	CHECK(fd >= 0 && t_files(fd, "f%02d", FILES) == 0);
	CHECK(de_ctx_new(&ctx, &cfg) == 0);

	/* A dry run: every entry "would be" removed, nothing is. */
	CHECK(call(ctx, dfd, &dry, &rs, &sum) == 0);
	CHECK(sum.removed_total == FILES + 1);
	for (i = 0; i < rs.n; i++)
		CHECK(rs.v[i].result == DE_R_REMOVED);
	CHECK(t_count(dfd, "tree") == FILES + 1);
	t_reps_free(&rs);

	/* A limit of 3: exactly the first three in rsync's order (the
	 * highest names first), the rest skipped, the directory kept. */
	CHECK(call(ctx, dfd, &lim, &rs, &sum) == -EDQUOT);
	CHECK(sum.removed_total == 3);
	CHECK(!t_exists(fd, "f09") && !t_exists(fd, "f08") &&
	      !t_exists(fd, "f07") && t_exists(fd, "f06"));
	CHECK(t_count(dfd, "tree") == FILES - 3 + 1);
	t_reps_free(&rs);

	/* No options: the context's own (unlimited) again. */
	CHECK(call(ctx, dfd, NULL, &rs, &sum) == 0);
	CHECK(sum.removed_total == FILES - 3 + 1);
	CHECK(!t_exists(dfd, "tree"));
	ret = T_PASS;
out:
	if (fd >= 0)
		close(fd);
	t_reps_free(&rs);
	de_ctx_free(ctx);
	return ret;
}

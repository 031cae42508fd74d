/* rate: de_config.rate spaces removals evenly over all workers, so n
 * entries take at least (n - 1) / rate seconds; the progress hook keeps
 * being called meanwhile and sees the count grow before the single big
 * directory is done; everything is still removed. */
#include "tutil.h"

static int calls;
static long total;		/* entries in the tree */
static int seen_mid;		/* a call saw 0 < removed < total */

static int on_progress(void *arg, const struct de_progress *p)
{
	(void)arg;
	calls++;
	if (p->removed > 0 && p->removed < (uint64_t)total)
		seen_mid = 1;
	return 0;
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .progress_ms = 50, .rate = 1000 };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_hooks h = { .progress = on_progress };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, rc;
	long n = 0;
	double took = 0;

	/* One flat directory: its reports may all wait for the end. */
	CHECK(mkdirat(dfd, "tree", 0755) == 0);
	CHECK(t_files(dfd, "tree/f%d", 400) == 0);
	n = t_count(dfd, "tree");
	CHECK(n == 401);
	total = n;
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = t_remove_timed(ctx, dfd, &t, &h, &sum, &took);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK((long)sum.removed_total == n);
	/* Sleeps can only run long, so the lower bound is exact. */
	CHECK(took >= (n - 1) / 1000.0);
	CHECK(calls >= 2);
	CHECK(seen_mid);
	ret = T_PASS;
out:
	if (ret != T_PASS)
		fprintf(stderr, "rate: %ld entries in %.3f s, %d progress calls\n",
			n, took, calls);
	de_ctx_free(ctx);
	return ret;
}

/* rate: de_config.rate spaces removals evenly over all workers, so n
 * entries take at least (n - 1) / rate seconds; the progress hook keeps
 * being called meanwhile and sees the count grow before the single big
 * directory is done; everything is still removed. */
#include "tutil.h"

#include <time.h>

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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .progress_ms = 50, .rate = 1000 };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_hooks h = { .progress = on_progress };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, dfd, rc, sub = -1, i;
	long n = 0;
	double t0, took = 0;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	/* One flat directory: its reports may all wait for the end. */
	CHECK((sub = t_dir(dfd, "tree")) >= 0);
	for (i = 0; i < 400; i++) {
		char name[16];

		snprintf(name, sizeof name, "f%d", i);
		CHECK(t_file(sub, name) == 0);
	}
	n = t_count(dfd, "tree");
	CHECK(n == 401);
	total = n;
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	t0 = now_s();
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	took = now_s() - t0;
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
	if (sub >= 0)
		close(sub);
	close(dfd);
	t_cleanup();
	return ret;
}

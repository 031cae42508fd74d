/* rate_burst: with rate R and rate_burst B, removals come in bursts of B
 * whose starts are B / R seconds apart.  100 files and their directory
 * at 40/s in bursts of 100, on one worker: the 101st removal waits for
 * the second burst, so the run takes at least 2.5 s (a lower bound:
 * sleeps only run long), and the first 100 run back to back: the fault
 * hook, called just before each removal is paced, sees the 100th less
 * than 1.25 s after the first, where evenly spaced removals would take
 * 2.475 s (the only upper bound here, loose enough for a loaded
 * machine). */
#include "tutil.h"

#define N 101			/* 100 files and their directory */
#define RATE 40
#define BURST 100

static double stamp[N + 16];
static int nstamp;

static int hook(void *arg, int op, const char *name)
{
	(void)arg;
	(void)name;
	if ((op == DE_OP_UNLINK || op == DE_OP_RMDIR) &&
	    nstamp < (int)(sizeof stamp / sizeof stamp[0]))
		stamp[nstamp++] = t_now();
	return 0;
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 1, .max_delete = -1, .rate = RATE,
				 .rate_burst = BURST };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL;
	double took = 0, pause = (double)BURST / RATE;
	int bursts = (N + BURST - 1) / BURST;

	CHECK(mkdirat(dfd, "tree", 0755) == 0);
	CHECK(t_files(dfd, "tree/f%d", N - 1) == 0);
	CHECK(de_test_ctx_new(&ctx, &cfg, hook, NULL) == 0);
	CHECK(t_remove_timed(ctx, dfd, &t, NULL, &sum, &took) == 0);
	CHECK(sum.removed_total == N && !t_exists(dfd, "tree"));
	CHECK(took >= (bursts - 1) * pause);
	/* One worker: stamp[k + 1] is taken after removal k was made. */
	CHECK(nstamp == N);
	CHECK(stamp[BURST - 1] - stamp[0] < 0.5 * (BURST - 1) / RATE);
	ret = T_PASS;
out:
	if (ret != T_PASS)
		fprintf(stderr, "rate_burst: %d removals in %.3f s\n", nstamp, took);
	de_ctx_free(ctx);
	return ret;
}

/* rate_dispose: de_config.rate paces the entries the dispose hook takes
 * (rsync's --backup renames) as it paces unlinks: 61 entries at 200 a
 * second, 60 files moved aside by the hook and their directory removed,
 * take at least 0.3 s, and no hook call comes before its slot; files
 * the hook hands back are unlinked and counted as usual (issue 22: backups were not paced at all). */
#include "tutil.h"

#define N 60
#define RATE 200

static double stamp[N + 8];
static int nstamp, bakfd = -1;

/* Move each file aside into bak/, as a backup does; hand every tenth
 * back to the engine to unlink. */
static enum de_action dispose(void *arg, int dirfd, const char *name,
			      const char *relpath, enum de_type type)
{
	(void)arg;
	(void)relpath;
	(void)type;
	if (nstamp < (int)(sizeof stamp / sizeof stamp[0]))
		stamp[nstamp++] = t_now();
	if (name[1] == '0')
		return DE_A_DELETE;
	return renameat(dirfd, name, bakfd, name) ? DE_A_KEEP : DE_A_DONE;
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1, .rate = RATE };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_hooks h = { .dispose = dispose };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, rc, i;
	double took;

	CHECK(mkdirat(dfd, "tree", 0755) == 0);
	CHECK((bakfd = t_dir(dfd, "bak")) >= 0);
	for (i = 0; i < N; i++) {
		char path[32];

		/* f<digit><n>: every tenth has '0' second, see dispose(). */
		snprintf(path, sizeof path, "tree/f%d%d", i % 10, i);
		CHECK(t_file(dfd, path) == 0);
	}
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = t_remove_timed(ctx, dfd, &t, &h, &sum, &took);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(nstamp == N);
	CHECK(sum.removed_total == N + 1);
	CHECK(t_count(dfd, "bak") == 1 + N - N / 10);
	/* N + 1 removals, RATE a second: at least N / RATE seconds. */
	if (took < (double)N / RATE * 0.95) {
		fprintf(stderr, "%d entries at %d/s took only %.3f s\n", N + 1,
			RATE, took);
		goto out;
	}
	/* No hook call before its slot: the k-th at least k slots after
	 * the first (slots are on a grid, so a late one may be followed by
	 * one less than a slot after it). */
	for (i = 1; i < nstamp; i++) {
		if (stamp[i] - stamp[0] < (i - 0.5) / RATE) {
			fprintf(stderr, "call %d at %.4f s, before its slot\n", i,
				stamp[i] - stamp[0]);
			goto out;
		}
	}
	ret = T_PASS;
out:
	de_ctx_free(ctx);
	if (bakfd >= 0)
		close(bakfd);
	return ret;
}

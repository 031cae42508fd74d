/* small_calls: rsync calls de_remove() once per directory of a sync, with
 * that directory's few extraneous files as the targets.  Such a call must
 * hand nothing off: the calling thread unlinks every file itself, on the
 * first call (which starts the pool) and on every later one.  When each
 * call woke a worker and waited for it, a sync deleting a few files in
 * each of 2,000 directories took 1.10 of stock rsync's time
 * (bench/results/2026-12-06/against-history.md).  Counted by the fault
 * hook, which runs on the thread that unlinks: every unlink on the caller, none
 * elsewhere, and every file gone. */
#include "tutil.h"

enum { CALLS = 50, FILES = 5 };

struct who {
	pthread_t caller;
	atomic_int here, elsewhere;
};

static int fault(void *arg, int op, const char *name)
{
	struct who *w = arg;

	(void)name;
	if (op != DE_OP_UNLINK)
		return 0;
	if (pthread_equal(pthread_self(), w->caller))
		atomic_fetch_add(&w->here, 1);
	else
		atomic_fetch_add(&w->elsewhere, 1);
	return 0;
}

/* Directory NAME in dfd with FILES files, all of them removed by one
 * call, as rsync's delete_dir_batch() makes it. */
static int one_call(de_ctx *ctx, int dfd, const char *name)
{
	char names[FILES][16];
	struct de_target t[FILES];
	struct de_summary sum;
	int sub, j, rc, ret = -1;

	sub = t_dir(dfd, name);
	CHECK(sub >= 0);
	for (j = 0; j < FILES; j++) {
		snprintf(names[j], sizeof names[j], "f%d", j);
		CHECK(t_file(sub, names[j]) == 0);
		t[j].name = names[j];
		t[j].type = DE_T_FILE;
		t[j].ino = 0;
	}
	rc = de_remove(ctx, sub, t, FILES, NULL, NULL, &sum);
	if (rc || sum.removed_total != FILES) {
		fprintf(stderr, "%s: rc %d, removed %llu of %d\n", name, rc,
			(unsigned long long)sum.removed_total, FILES);
		goto out;
	}
	CHECK(t_count(dfd, name) == 1);
	ret = 0;
out:
	if (sub >= 0)
		close(sub);
	return ret;
}

int test(int dfd)
{
	struct de_config cfg = { .max_delete = -1 };	/* the engine's threads */
	struct who w = { .caller = pthread_self() };
	de_ctx *ctx = NULL;
	char name[32];
	int ret = T_FAIL, i;

	CHECK(de_test_ctx_new(&ctx, &cfg, fault, &w) == 0);
	for (i = 0; i < CALLS; i++) {
		snprintf(name, sizeof name, "d%d", i);
		CHECK(one_call(ctx, dfd, name) == 0);
	}
	if (atomic_load(&w.elsewhere) || atomic_load(&w.here) != CALLS * FILES) {
		fprintf(stderr, "unlinks: %d on the calling thread, %d on workers "
			"(want %d and 0)\n", atomic_load(&w.here),
			atomic_load(&w.elsewhere), CALLS * FILES);
		goto out;
	}
	ret = T_PASS;
out:
	de_ctx_free(ctx);
	return ret;
}

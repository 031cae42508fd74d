/* few_workers: when workers cannot be started (the fault hook fails
 * DE_OP_THREAD, as a ulimit -v or a process limit fails pthread_create),
 * the engine runs with half of those it started, down to none, where the
 * calling thread does all the work: every mode (unordered, ordered, dry
 * run, max_delete, enter_dir and dispose hooks) still removes the whole
 * tree (or reports all of it, in a dry run) with nothing failed (issue
 * 22: --delete-threads=1024 under ulimit -v 1000000 left the run no
 * memory, and with none started it could not run at all). */
#include "tutil.h"

struct lim {
	int ok;		/* DE_OP_THREAD calls that succeed */
	int calls;
};

static int fault(void *arg, int op, const char *name)
{
	struct lim *l = arg;

	(void)name;
	if (op != DE_OP_THREAD)
		return 0;
	return l->calls++ < l->ok ? 0 : EAGAIN;
}

static int enter(void *arg, const char *relpath, struct de_dirent *ents,
		 size_t n)
{
	(void)arg;
	(void)relpath;
	(void)ents;
	(void)n;
	return 0;
}


enum { M_PLAIN, M_ORDERED, M_DRY, M_MAXDEL, M_ENTER, M_DISPOSE, M_COUNT };

static int one(int dfd, int ok, int mode)
{
	struct lim l = { ok, 0 };
	struct de_config cfg = { .threads = 8, .max_delete = -1 };
	struct t_reps rs = { 0 };
	struct de_hooks h = { .arg = &rs, .report = t_collect };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	long before;
	int ret = -1, rc, pass;

	if (mode == M_ORDERED)
		cfg.flags = DE_F_ORDERED;
	if (mode == M_DRY)
		cfg.flags = DE_F_DRY_RUN;
	if (mode == M_MAXDEL)
		cfg.max_delete = 1000000;
	if (mode == M_ENTER)
		h.enter_dir = enter;
	if (mode == M_DISPOSE)
		h.dispose = t_dispose_delete;
	CHECK(de_test_ctx_new(&ctx, &cfg, fault, &l) == 0);
	/* Twice: the second run reuses the pool the first one started. */
	for (pass = 0; pass < 2; pass++) {
		CHECK(t_mixed(dfd, "tree", 3, 3) == 0);
		before = t_count(dfd, "tree");
		rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
		if (rc || sum.failed || (long)sum.removed_total != before) {
			fprintf(stderr, "ok=%d mode=%d: rc %d, failed %llu, "
				"removed %llu of %ld\n", ok, mode, rc,
				(unsigned long long)sum.failed,
				(unsigned long long)sum.removed_total, before);
			goto out;
		}
		CHECK((long)rs.n == before);
		CHECK(mode == M_DRY ? t_count(dfd, "tree") == before :
		      !t_exists(dfd, "tree"));
		if (mode == M_DRY)
			t_cleanup_sub(dfd, "tree");
		t_reps_free(&rs);
	}
	CHECK(l.calls == (ok < 8 ? ok + 1 : 8));
	ret = 0;
out:
	t_reps_free(&rs);
	de_ctx_free(ctx);
	return ret;
}

int test(int dfd)
{
	static const int oks[] = { 0, 1, 3, 8 };
	int ret = T_FAIL, m;
	size_t i;

	for (i = 0; i < sizeof oks / sizeof oks[0]; i++)
		for (m = 0; m < M_COUNT; m++)
			CHECK(one(dfd, oks[i], m) == 0);
	ret = T_PASS;
out:
	return ret;
}

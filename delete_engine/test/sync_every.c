/* sync_every: the engine syncs the file system after exactly every
 * sync_every-th removal, counted over all workers and over successive
 * de_remove() calls on one context (rsync makes one call per directory),
 * and a syncing run still removes everything.  Counted through the
 * fault hook's DE_OP_SYNC, so nothing here depends on timing. */
#include "tutil.h"

static int syncs;		/* DE_OP_SYNC calls seen */
static int other;		/* calls for any other op */

static int count(void *arg, int op, const char *name)
{
	(void)arg;
	(void)name;
	if (op == DE_OP_SYNC) {
		/* Let the first one really syncfs(); skip the rest, which
		 * would only make the test slow on a busy disk. */
		return __atomic_add_fetch(&syncs, 1, __ATOMIC_RELAXED) > 1;
	}
	__atomic_add_fetch(&other, 1, __ATOMIC_RELAXED);
	return 0;
}

static int fill(int dfd, const char *dir, int files)
{
	int sub, i;

	if ((sub = t_dir(dfd, dir)) < 0)
		return -1;
	for (i = 0; i < files; i++) {
		char name[16];

		snprintf(name, sizeof name, "f%d", i);
		if (t_file(sub, name)) {
			close(sub);
			return -1;
		}
	}
	close(sub);
	return 0;
}

int main(void)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .sync_every = 10, .fault = count };
	struct de_target a = { "a", DE_T_DIR, 0 }, b = { "b", DE_T_DIR, 0 };
	struct de_target t2[] = { { "c", DE_T_DIR, 0 }, { "d", DE_T_DIR, 0 } };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, dfd;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	/* a: 104 entries; b: 5; c and d: 3 each (a file and the dir). */
	CHECK(fill(dfd, "a", 103) == 0);
	CHECK(fill(dfd, "b", 4) == 0);
	CHECK(fill(dfd, "c", 2) == 0);
	CHECK(fill(dfd, "d", 2) == 0);
	CHECK(de_ctx_new(&ctx, &cfg) == 0);

	CHECK(de_remove(ctx, dfd, &a, 1, NULL, &sum) == 0);
	CHECK(sum.removed_total == 104 && !t_exists(dfd, "a"));
	CHECK(syncs == 10);		/* after removals 10, 20, ..., 100 */
	CHECK(de_remove(ctx, dfd, &b, 1, NULL, &sum) == 0);
	CHECK(sum.removed_total == 5 && syncs == 10);	/* 109 so far */
	CHECK(de_remove(ctx, dfd, t2, 2, NULL, &sum) == 0);
	CHECK(sum.removed_total == 6 && syncs == 11);	/* 115: one at 110 */
	CHECK(!t_exists(dfd, "c") && !t_exists(dfd, "d"));
	CHECK(other > 0);
	ret = T_PASS;
out:
	if (ret != T_PASS)
		fprintf(stderr, "sync_every: %d syncs\n", syncs);
	de_ctx_free(ctx);
	close(dfd);
	t_cleanup();
	return ret;
}

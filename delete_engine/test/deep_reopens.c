/* deep_reopens: a chain deeper than the fd budget is removed with a
 * bounded number of directory reopens per level, by a serial run
 * (--max-delete, the dispose hook of rsync's --backup, every run on
 * btrfs) and by the global schedule.  Both used to pin a directory from
 * its nearest held ancestor once per file: a 2,000-level chain took 527 s
 * on btrfs (serial) and 507 s on tmpfs (global) where rm -rf takes 3.
 * The walks come back up to each directory to remove its subdirectory,
 * and that directory's fd was closed meanwhile.  Reopens are counted by
 * the fault hook (DE_OP_REOPEN); past the bound it fails them, so a
 * regression fails fast instead of slowly. */
#include "tutil.h"
#include <sys/resource.h>

#define LEVELS 1500
#define FILES 3
#define PER_LEVEL 4	/* down, up (as ".."), and slack */

static atomic_long reopens;

static int count(void *arg, int op, const char *name)
{
	(void)arg;
	(void)name;
	if (op != DE_OP_REOPEN)
		return 0;
	return atomic_fetch_add(&reopens, 1) < PER_LEVEL * LEVELS ? 0 : EIO;
}


/* Remove chain name: serially (max_delete >= 0, or the dispose hook), or
 * with schedule sched. */
static int run(int dfd, const char *name, long long max_delete, int dispose,
	       unsigned sched)
{
	struct de_config cfg = { .threads = 2, .max_delete = max_delete,
				 .schedule = sched };
	struct de_target t = { name, DE_T_DIR, 0 };
	struct de_hooks h;
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int rc, ret = -1;

	memset(&h, 0, sizeof(h));
	h.dispose = dispose ? t_dispose_delete : NULL;
	atomic_store(&reopens, 0);
	CHECK(de_test_ctx_new(&ctx, &cfg, count, NULL) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	if (rc || sum.removed_total != (uint64_t)(LEVELS * (FILES + 1) + 1) ||
	    t_exists(dfd, name)) {
		fprintf(stderr, "%s: rc %d, removed %llu of %d, %ld reopens\n",
			name, rc, (unsigned long long)sum.removed_total,
			LEVELS * (FILES + 1) + 1, atomic_load(&reopens));
		goto out;
	}
	fprintf(stderr, "%s: %ld reopens for %d levels\n", name,
		atomic_load(&reopens), LEVELS);
	ret = 0;
out:
	de_ctx_free(ctx);
	return ret;
}

int test(int dfd)
{
	struct rlimit rl = { 64, 64 };
	int ret = T_FAIL;

	CHECK(t_chain(dfd, "limit", "a", LEVELS, "f%d", FILES, NULL, NULL) ==
	      LEVELS + 1);
	CHECK(t_chain(dfd, "dispose", "a", LEVELS, "f%d", FILES, NULL, NULL) ==
	      LEVELS + 1);
	CHECK(t_chain(dfd, "global", "a", LEVELS, "f%d", FILES, NULL, NULL) ==
	      LEVELS + 1);
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	CHECK(run(dfd, "limit", 1000000, 0, DE_SCHED_DIRS) == 0);
	CHECK(run(dfd, "dispose", -1, 1, DE_SCHED_DIRS) == 0);
	CHECK(run(dfd, "global", -1, 0, DE_SCHED_GLOBAL) == 0);
	ret = T_PASS;
out:
	return ret;
}

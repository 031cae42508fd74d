/* deep_lowfd: a chain far deeper than the fd budget, under RLIMIT_NOFILE
 * 10 and 16 (a budget of one fd, or a few), is removed with a bounded
 * number of directory opens per level by every caller that pins a
 * directory: the serial walk (--max-delete, and the dispose hook of
 * rsync's --backup), the global schedule, the per-directory one, and the default.  The fd
 * cache used to close the fd just unpinned and reopen a closed one by
 * walking down from its nearest held ancestor: with a budget of a few
 * fds the serial walk pins nothing itself, and each file pinned its
 * directory from the root, so 2,000 levels took 20 s and 12,000 more
 * than 300 s (rm -rf: 0.3 s).  Opens and reopens are counted by the
 * fault hook; past the bound it fails them, so a regression fails fast
 * instead of slowly. */
#include "tutil.h"
#include <sys/resource.h>

#define LEVELS 1500
#define FILES 2
/* A first open per level, then down, up (as ".."), and slack. */
#define PER_LEVEL 6

static atomic_long opens;

static int count(void *arg, int op, const char *name)
{
	(void)arg;
	(void)name;
	if (op != DE_OP_REOPEN && op != DE_OP_OPEN)
		return 0;
	return atomic_fetch_add(&opens, 1) < PER_LEVEL * LEVELS ? 0 : EIO;
}


/*
 * Build chain name, then remove it under a soft limit of limit fds:
 * serially (max_delete >= 0, or the dispose hook), or with schedule
 * sched.  Returns 0 when it is gone within the bound.
 */
static int run(int dfd, const char *name, rlim_t limit, long long max_delete,
	       int dispose, unsigned sched)
{
	struct de_config cfg = { .threads = 2, .max_delete = max_delete,
				 .schedule = sched };
	struct de_target t = { name, DE_T_DIR, 0 };
	struct rlimit old, rl;
	struct de_hooks h;
	struct de_summary sum;
	de_ctx *ctx = NULL;
	double t0;
	int rc, ret = -1, lowered = 0;

	memset(&h, 0, sizeof(h));
	h.dispose = dispose ? t_dispose_delete : NULL;
	CHECK(t_chain(dfd, name, "a", LEVELS, "f%d", FILES, NULL, NULL) ==
	      LEVELS + 1);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	rl = old;
	rl.rlim_cur = limit;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	lowered = 1;
	atomic_store(&opens, 0);
	CHECK(de_test_ctx_new(&ctx, &cfg, count, NULL) == 0);
	t0 = t_now();
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	if (rc || sum.removed_total != (uint64_t)(LEVELS * (FILES + 1) + 1) ||
	    t_exists(dfd, name)) {
		fprintf(stderr, "%s, limit %lu: rc %d, removed %llu of %d, "
			"%ld opens (bound %d) in %.1f s\n", name,
			(unsigned long)limit, rc,
			(unsigned long long)sum.removed_total,
			LEVELS * (FILES + 1) + 1, atomic_load(&opens),
			PER_LEVEL * LEVELS, t_now() - t0);
		goto out;
	}
	fprintf(stderr, "%s, limit %lu: %ld opens for %d levels in %.2f s\n",
		name, (unsigned long)limit, atomic_load(&opens), LEVELS,
		t_now() - t0);
	ret = 0;
out:
	de_ctx_free(ctx);
	if (lowered)
		setrlimit(RLIMIT_NOFILE, &old);
	t_cleanup_sub(dfd, name);
	return ret;
}

int test(int dfd)
{
	static const rlim_t limits[] = { 10, 16 };
	int ret = T_FAIL, bad = 0;
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		rlim_t l = limits[i];

		bad |= run(dfd, "limit", l, 1000000, 0, DE_SCHED_DIRS);
		bad |= run(dfd, "dispose", l, -1, 1, DE_SCHED_DIRS);
		bad |= run(dfd, "global", l, -1, 0, DE_SCHED_GLOBAL);
		bad |= run(dfd, "dirs", l, -1, 0, DE_SCHED_DIRS);
		bad |= run(dfd, "default", l, -1, 0, DE_SCHED_AUTO);
	}
	CHECK(!bad);
	ret = T_PASS;
out:
	return ret;
}

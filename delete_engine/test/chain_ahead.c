/* chain_ahead: with the phase-2 gate forced on (DE_F_ADAPT), the worker
 * that reads a chain scans each next directory itself, up to ahead_max
 * directories ahead of the unlinker (sched.c run_phase2).  A chain whose
 * every 25th level also holds a short side chain (so a reader that runs
 * ahead queues the other children and may meet the ordered window) is
 * removed completely and counted exactly, with 2 and 3 threads,
 * unordered and ordered (reports in canonical order), and under
 * RLIMIT_NOFILE 40, where the fd budget caps the run-ahead at a few
 * directories. */
#include "tutil.h"

#include <sys/resource.h>

#define LEVELS 600
#define FILES 4
#define SIDE_EVERY 25
#define SIDE_LEN 3

/* At every SIDE_EVERY-th level of the chain, a side chain of SIDE_LEN
 * directories "side", "side/s", ...; *sides counts them. */
static int side(int fd, int level, void *sides)
{
	if (level % SIDE_EVERY)
		return 0;
	++*(int *)sides;
	return t_chain(fd, "side", "s", SIDE_LEN - 1, "f%d", FILES, NULL,
		       NULL);
}

/* The tree; returns the number of directories made (with "tree") and
 * sets *files, or -1. */
static int build(int dfd, int *files)
{
	int sides = 0, dirs;

	dirs = t_chain(dfd, "tree", "dd", LEVELS, "f%d", FILES, side, &sides);
	/* The deepest directory of each chain holds no files. */
	*files = (dirs - 1 - sides) * FILES;
	return dirs;
}

/* One removal of a fresh tree under an RLIMIT_NOFILE soft limit of
 * nofile (0: unchanged); returns 0 or -1 (after a message). */
static int one(int dfd, unsigned threads, int ordered, rlim_t nofile)
{
	struct rlimit rl, old;
	struct de_config cfg = { .threads = threads, .flags = DE_F_ADAPT,
				 .max_delete = -1 };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct t_names ref = { 0 };
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct de_hooks h;
	de_ctx *ctx = NULL;
	int dirs, files, rc, ret = -1, lowered = 0;
	size_t i;

	dirs = build(dfd, &files);
	if (dirs < 0)
		goto out;
	if (ordered) {
		cfg.flags |= DE_F_ORDERED;
		/* t_canon holds one fd per level. */
		t_canon(dfd, "tree", "tree", &ref);
	}
	if (nofile) {
		if (getrlimit(RLIMIT_NOFILE, &old))
			goto out;
		rl = old;
		rl.rlim_cur = nofile;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			goto out;
		lowered = 1;
	}
	memset(&h, 0, sizeof(h));
	h.arg = &rs;
	h.report = t_collect;
	if (de_ctx_new(&ctx, &cfg))
		goto out;
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	if (rc || t_exists(dfd, "tree") ||
	    sum.removed[DE_T_DIR] != (uint64_t)dirs ||
	    sum.removed[DE_T_FILE] != (uint64_t)files ||
	    sum.failed || sum.not_empty ||
	    rs.n != (size_t)(dirs + files) ||
	    strcmp(rs.v[rs.n - 1].path, "tree")) {
		fprintf(stderr, "threads %u ordered %d: rc %d, dirs %llu/%d, "
			"files %llu/%d, reports %zu\n", threads, ordered, rc,
			(unsigned long long)sum.removed[DE_T_DIR], dirs,
			(unsigned long long)sum.removed[DE_T_FILE], files,
			rs.n);
		goto out;
	}
	for (i = 0; ordered && i < rs.n; i++) {
		if (i >= ref.n || strcmp(rs.v[i].path, ref.v[i])) {
			fprintf(stderr, "threads %u: report %zu is %s, "
				"want %s\n", threads, i, rs.v[i].path,
				i < ref.n ? ref.v[i] : "(none)");
			goto out;
		}
	}
	ret = 0;
out:
	if (lowered)
		(void)setrlimit(RLIMIT_NOFILE, &old);
	if (ctx)
		de_ctx_free(ctx);
	t_reps_free(&rs);
	t_names_free(&ref);
	return ret;
}

int test(int dfd)
{
	static const unsigned threads[] = { 2, 3 };
	int ret = T_FAIL, ti, ordered;

	for (ti = 0; ti < 2; ti++)
		for (ordered = 0; ordered < 2; ordered++)
			CHECK(one(dfd, threads[ti], ordered, 0) == 0);
	for (ordered = 0; ordered < 2; ordered++)
		CHECK(one(dfd, 2, ordered, 40) == 0);
	ret = T_PASS;
out:
	return ret;
}

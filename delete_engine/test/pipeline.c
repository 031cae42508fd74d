/* pipeline: with the phase-2 gate forced on (DE_F_P2_GATE), where a worker
 * that scanned a directory in a narrow part of the tree hands it to the
 * worker already unlinking instead of unlinking beside it, a tree with
 * narrow and wide parts is removed completely and counted exactly, with
 * 2 and 4 threads, unordered, ordered and with an enter_dir hook (which
 * sees every directory exactly once). */
#include "tutil.h"

#define LEVELS 200
#define FILES 10
#define FAN 40

static int enters;

static int enter(void *arg, const char *rel, struct de_dirent *e, size_t n)
{
	(void)arg; (void)rel; (void)e; (void)n;
	enters++;
	return 0;
}

static void leave(void *arg, const char *rel)
{
	(void)arg; (void)rel;
}

/* Halfway down the chain, FAN siblings with FILES files and a 3-level
 * chain each. */
static int fan(int fd, int level, void *arg)
{
	int dirs = 0, j, n;
	char name[32];

	(void)arg;
	if (level != LEVELS / 2)
		return 0;
	for (j = 0; j < FAN; j++) {
		snprintf(name, sizeof(name), "w%02d", j);
		n = t_chain(fd, name, "c", 3, "f%02d", FILES, NULL, NULL);
		if (n < 0)
			return -1;
		dirs += n;
	}
	return dirs;
}

/* A chain of LEVELS directories, with the fan.  Returns the number of
 * directories made (with "tree"), or -1. */
static int build(int dfd)
{
	return t_chain(dfd, "tree", "dd", LEVELS, "f%02d", FILES, fan, NULL);
}

int test(int dfd)
{
	static const unsigned threads[] = { 2, 4 };
	struct de_summary sum;
	struct t_reps rs = { 0 };
	int ret = T_FAIL, dirs, files, rc, mode, ti;

	for (ti = 0; ti < 2; ti++) {
		for (mode = 0; mode < 3; mode++) {
			struct de_config cfg = { .threads = threads[ti],
						 .flags = DE_F_P2_GATE,
						 .max_delete = -1 };
			struct de_target t = { "tree", DE_T_DIR, 0 };
			struct de_hooks h;
			de_ctx *ctx;

			dirs = build(dfd);
			CHECK(dirs > 0);
			/* Every directory but the leaves holds FILES files:
			 * the chain's last "dd" and each fan's last "c". */
			files = (dirs - 1 - FAN) * FILES;
			memset(&h, 0, sizeof(h));
			h.arg = &rs;
			h.report = t_collect;
			if (mode == 1)
				cfg.flags |= DE_F_ORDERED;
			if (mode == 2) {
				h.enter_dir = enter;
				h.leave_dir = leave;
			}
			enters = 0;
			CHECK(de_ctx_new(&ctx, &cfg) == 0);
			rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
			de_ctx_free(ctx);
			if (rc || t_exists(dfd, "tree"))
				fprintf(stderr, "threads %u mode %d: rc %d\n",
					threads[ti], mode, rc);
			CHECK(rc == 0);
			CHECK(!t_exists(dfd, "tree"));
			CHECK(sum.removed[DE_T_DIR] == (uint64_t)dirs);
			CHECK(sum.removed[DE_T_FILE] == (uint64_t)files);
			CHECK(sum.failed == 0 && sum.not_empty == 0);
			CHECK(rs.n == (size_t)(dirs + files));
			CHECK(!strcmp(rs.v[rs.n - 1].path, "tree"));
			CHECK(mode != 2 || enters == dirs);
			t_reps_free(&rs);
		}
	}
	ret = T_PASS;
out:
	t_reps_free(&rs);
	return ret;
}

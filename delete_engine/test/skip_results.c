/* skip_results: with de_hooks.skip_results set to REMOVED|VANISHED only
 * the other results are reported (a failed unlink and the directories
 * it keeps), in every mode (unordered, ordered, dry run), while the
 * summary counts exactly what a run reporting everything counts. */
#include "tutil.h"

static int fail_bad(void *arg, int op, const char *name)
{
	(void)arg;
	return op == DE_OP_UNLINK && !strcmp(name, "bad") ? EIO : 0;
}

/* tree/{f0..f9, ln, d0/{f0..f9, ln, sub/{f0..f9, bad}}, d1/{f0..f9}} */
static int make_tree(int dfd)
{
	static const char *dirs[] = { "tree", "tree/d0", "tree/d0/sub",
				      "tree/d1" };
	size_t i;
	int fd;

	for (i = 0; i < 4; i++) {
		fd = t_dir(dfd, dirs[i]);
		if (fd < 0)
			return -1;
		if (t_files(fd, "f%d", 10)) {
			close(fd);
			return -1;
		}
		if ((i < 2 && symlinkat("f0", fd, "ln")) ||
		    (i == 2 && t_file(fd, "bad"))) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

static int run(int dfd, unsigned flags, unsigned skip, struct t_reps *rs,
	       struct de_summary *sum)
{
	struct de_config cfg = { .threads = 2, .flags = flags,
				 .max_delete = -1 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_hooks h;
	de_ctx *ctx;
	int rc;

	memset(&h, 0, sizeof(h));
	h.arg = rs;
	h.report = t_collect;
	h.skip_results = skip;
	rc = de_test_ctx_new(&ctx, &cfg, fail_bad, NULL);
	if (rc)
		return rc;
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, sum);
	de_ctx_free(ctx);
	return rc;
}

int test(int dfd)
{
	static const unsigned modes[] = { 0, DE_F_ORDERED, DE_F_DRY_RUN };
	const unsigned skip = (1u << DE_R_REMOVED) | (1u << DE_R_VANISHED);
	struct t_reps all = { 0 }, few = { 0 };
	struct de_summary s1, s2;
	int ret = T_FAIL, rc;
	size_t m, i;

	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		CHECK(make_tree(dfd) == 0);
		rc = run(dfd, modes[m], 0, &all, &s1);
		CHECK(rc == (modes[m] & DE_F_DRY_RUN ? 0 : -EIO));
		t_cleanup_sub(dfd, "tree");
		CHECK(make_tree(dfd) == 0);
		rc = run(dfd, modes[m], skip, &few, &s2);
		CHECK(rc == (modes[m] & DE_F_DRY_RUN ? 0 : -EIO));
		t_cleanup_sub(dfd, "tree");

		CHECK(memcmp(&s1, &s2, sizeof(s1)) == 0);
		CHECK(all.n == 47);	/* 4 dirs, 40 files, 2 links, bad */
		for (i = 0; i < few.n; i++)
			CHECK(few.v[i].result != DE_R_REMOVED &&
			      few.v[i].result != DE_R_VANISHED);
		if (modes[m] & DE_F_DRY_RUN) {
			CHECK(few.n == 0);
		} else {
			/* bad failed; sub, d0 and tree kept. */
			CHECK(few.n == 4);
			CHECK(t_find(&few, "tree/d0/sub/bad") &&
			      t_find(&few, "tree/d0/sub/bad")->result ==
			      DE_R_FAILED);
			CHECK(t_find(&few, "tree/d0/sub") &&
			      t_find(&few, "tree/d0/sub")->result ==
			      DE_R_NOT_EMPTY);
			CHECK(t_find(&few, "tree/d0") &&
			      t_find(&few, "tree") &&
			      t_find(&few, "tree")->result == DE_R_NOT_EMPTY);
			CHECK(s2.removed_total == 40 + 2 + 1);	/* d1 */
		}
		t_reps_free(&all);
		t_reps_free(&few);
	}
	ret = T_PASS;
out:
	t_reps_free(&all);
	t_reps_free(&few);
	return ret;
}

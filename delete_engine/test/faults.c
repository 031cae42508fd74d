/* faults: injected EIO/ENOMEM/EMFILE on open, unlink, read (and EIO on
 * rmdir) are reported on the right entry with the right op and errno; the
 * victim and its ancestors stay, everything else is removed. */
#include "tutil.h"

struct fault {
	int op, err;
};

static int hook(void *arg, int op, const char *name)
{
	const struct fault *f = arg;

	if (op == f->op && !strcmp(name, "victim"))
		return f->err;
	return 0;
}

static int one(int dfd, int op, int err, int victim_is_dir)
{
	struct fault f = { op, err };
	struct de_config cfg = { .threads = 2, .max_delete = -1 };
	struct t_reps rs = { 0 };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct t_rep *r;
	de_ctx *ctx = NULL;
	int ret = -1, rc;

	h.arg = &rs;
	h.report = t_collect;
	CHECK(t_paths(dfd, "tree/a", "tree/z", victim_is_dir ?
		      "tree/sub/victim/inner" : "tree/sub/victim",
		      "tree/sub/other", NULL) == 0);
	CHECK(t_mixed(dfd, "tree/more", 2, 3) == 0);
	CHECK(de_test_ctx_new(&ctx, &cfg, hook, &f) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(rc == -EIO);
	r = t_find(&rs, "tree/sub/victim");
	CHECK(r && r->result == DE_R_FAILED && r->op == op && r->err == err);
	CHECK(sum.failed == 1);
	r = t_find(&rs, "tree/sub");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	r = t_find(&rs, "tree");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	CHECK(sum.not_empty == 2);
	CHECK(t_exists(dfd, "tree/sub/victim"));
	CHECK(!t_exists(dfd, "tree/sub/other") && !t_exists(dfd, "tree/a"));
	CHECK(!t_exists(dfd, "tree/more"));
	if (victim_is_dir && op != DE_OP_RMDIR)
		CHECK(t_exists(dfd, "tree/sub/victim/inner"));
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "case op=%d err=%d\n", op, err);
	de_ctx_free(ctx);
	t_reps_free(&rs);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int test(int dfd)
{
	static const int errs[] = { EIO, ENOMEM, EMFILE };
	int ret = T_FAIL, i;

	for (i = 0; i < 3; i++) {
		CHECK(one(dfd, DE_OP_OPEN, errs[i], 1) == 0);
		CHECK(one(dfd, DE_OP_READ, errs[i], 1) == 0);
		CHECK(one(dfd, DE_OP_UNLINK, errs[i], 0) == 0);
	}
	CHECK(one(dfd, DE_OP_RMDIR, EIO, 1) == 0);
	ret = T_PASS;
out:
	return ret;
}

/* hook_unentered: with enter_dir set (how rsync applies its filter rules),
 * a directory inside a deleted subtree that the engine cannot enter is
 * still finished and reported, and de_remove() returns: open refused
 * (EACCES, EIO), the directory swapped for a symlink, removed by someone
 * else after its parent was listed (reported DE_R_VANISHED, and its parent
 * is then removed), or a mount point (as root).  Before, nothing made such
 * a directory final in hook mode and the walk waited for it forever
 * (issue 22), so an alarm turns a hang into a failure.  Hook mode runs
 * with 1 and 2 workers, and serially (max_delete) for comparison. */
#include "tutil.h"

enum how { H_EACCES, H_EIO, H_SWAP, H_GONE, H_MOUNT, H_COUNT };

static const char *how_name[] = { "EACCES", "EIO", "swap", "gone", "mount" };

static char victim[4200], moved[4200];

static int fault(void *arg, int op, const char *name)
{
	const enum how *how = arg;
	char inner[4300];

	if (op != DE_OP_OPEN || strcmp(name, "victim"))
		return 0;
	switch (*how) {
	case H_EACCES:
		return EACCES;
	case H_EIO:
		return EIO;
	case H_SWAP:
		/* Another process swaps the directory for a symlink between
		 * the listing and the open. */
		if (rename(victim, moved) || symlink(moved, victim))
			return EPERM;	/* shows up as a wrong err */
		return 0;
	case H_GONE:
		/* Another process removes it between the listing and the
		 * open: the real open then fails with ENOENT. */
		snprintf(inner, sizeof(inner), "%s/inner", victim);
		if (unlink(inner) || rmdir(victim))
			return EPERM;
		return 0;
	default:
		return 0;
	}
}

/* Returns 0 (passed), 1 (failed) or 77 (this case needs root). */
static int one(int dfd, enum how how, unsigned threads, long long maxdel)
{
	struct de_config cfg = { .threads = threads, .max_delete = maxdel };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct t_nest hk = { { 0 }, 0, 0 };
	struct t_rep *r;
	de_ctx *ctx = NULL;
	int ret = 1, rc, v = -1;
	enum how cur = how;

	h.arg = &hk;
	h.report = t_nest_report;
	h.enter_dir = t_nest_enter;
	h.leave_dir = t_nest_leave;
	CHECK(t_paths(dfd, "tree/a/f", "tree/a/z/y", "tree/b/g", NULL) == 0);
	v = t_dir(dfd, "tree/a/victim");
	CHECK(v >= 0);
	snprintf(victim, sizeof(victim), "%s/tree/a/victim", t_base);
	snprintf(moved, sizeof(moved), "%s/moved", t_base);
	if (how == H_MOUNT) {
		close(v);
		v = t_tmpfs("tree/a/victim");
		if (v < 0) {
			ret = T_SKIP;
			goto out;
		}
	}
	CHECK(t_file(v, "inner") == 0);

	CHECK(de_test_ctx_new(&ctx, &cfg, fault, &cur) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(hk.depth == 0 && !hk.bad);
	r = t_find(&hk.rs, "tree/a/victim");
	CHECK(r);
	CHECK(!t_exists(dfd, "tree/b") && !t_exists(dfd, "tree/a/z") &&
	      !t_exists(dfd, "tree/a/f"));
	switch (how) {
	case H_EACCES:
	case H_EIO:
	case H_SWAP:
		CHECK(rc == -EIO);
		CHECK(r->result == DE_R_FAILED && r->op == DE_OP_OPEN);
		if (how == H_SWAP) {
			CHECK(r->err == ELOOP || r->err == ENOTDIR);
			CHECK(t_exists(dfd, "moved/inner"));
		} else {
			CHECK(r->err == (how == H_EIO ? EIO : EACCES));
		}
		CHECK(sum.failed == 1);
		break;
	case H_GONE:
		CHECK(rc == 0);
		CHECK(r->result == DE_R_VANISHED);
		CHECK(sum.vanished == 1 && sum.failed == 0);
		break;
	case H_MOUNT:
		CHECK(rc == 0);
		CHECK(r->result == DE_R_MOUNT);
		CHECK(t_exists(v, "inner"));
		break;
	default:
		break;
	}
	if (how == H_GONE) {
		/* Its parents go: nothing was kept. */
		CHECK(!t_exists(dfd, "tree"));
		r = t_find(&hk.rs, "tree/a");
		CHECK(r && r->result == DE_R_REMOVED);
	} else {
		r = t_find(&hk.rs, "tree/a");
		CHECK(r && r->result == DE_R_NOT_EMPTY);
		r = t_find(&hk.rs, "tree");
		CHECK(r && r->result == DE_R_NOT_EMPTY);
	}
	ret = 0;
out:
	if (ret == 1)
		fprintf(stderr, "case %s threads=%u max_delete=%lld\n",
			how_name[how], threads, maxdel);
	de_ctx_free(ctx);
	t_reps_free(&hk.rs);
	t_umount(v);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "moved");
	return ret;
}

int test(int dfd)
{
	static const unsigned threads[] = { 1, 2 };
	static const long long maxdel[] = { -1, 1000 };
	int ret = T_FAIL, how, i, j, rc, skipped = 0;

	t_fail_on_alarm("hook_unentered");
	alarm(30);
	for (how = 0; how < H_COUNT; how++)
		for (i = 0; i < 2; i++)
			for (j = 0; j < 2; j++) {
				rc = one(dfd, (enum how)how, threads[i],
					 maxdel[j]);
				if (rc == T_SKIP)
					skipped = 1;
				else
					CHECK(rc == 0);
			}
	if (skipped)
		fprintf(stderr, "mount cases skipped (not root)\n");
	ret = T_PASS;
out:
	return ret;
}

/* unread_empty: as a non-root user (root forks and becomes nobody), an
 * empty directory that cannot be opened (mode 0, 0100, or 0300: not
 * readable) is removed by rmdir, as GNU rm removes it: reported
 * DE_R_REMOVED, with the open's failure kept in op and err (DE_OP_OPEN,
 * EACCES) for a front end that says so, as rsync does.  Its parent is
 * then removed too (before, it was kept as not empty, and rsync said
 * "cannot delete non-empty directory" of it where stock removes it).
 * A mode-0 directory with a file in it still fails with EACCES, its
 * mode and its file kept, and its parent is not empty.  A dry run
 * cannot know whether such a directory is empty, and reports the open's
 * failure for each, removing nothing.  A target that is itself an empty
 * mode-0 directory goes too, and de_remove() returns 0, as `rm -rf` of
 * it exits 0.  In every mode: unordered, ordered, enter_dir, serial
 * (max_delete), the global window, with and without DE_F_MAKE_WRITABLE. */
#include "tutil.h"

/* Each in DE_SCHED_DIRS but T_M_GLOBAL. */
static const enum t_mode modes[] = { T_M_UNORDERED, T_M_ORDERED, T_M_HOOK,
				     T_M_LIMIT, T_M_GLOBAL };

static const char *const empties[] = { "tree/x/m000", "tree/x/m100",
				       "tree/x/m300" };

static int build(int dfd)
{
	if (t_paths(dfd, "tree/x/m000/", "tree/x/m100/", "tree/x/m300/",
		    "tree/x/f", "tree/full/f", "tree/ok/g", "inacc/", NULL))
		return -1;
	return fchmodat(dfd, "tree/x/m000", 0, 0) ||
	       fchmodat(dfd, "tree/x/m100", 0100, 0) ||
	       fchmodat(dfd, "tree/x/m300", 0300, 0) ||
	       fchmodat(dfd, "tree/full", 0, 0) ||
	       fchmodat(dfd, "inacc", 0, 0) ? -1 : 0;
}

static int run1(int dfd, const char *target, enum t_mode mode, unsigned flags,
		struct t_reps *rs, struct de_summary *sum)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .flags = flags, .schedule = DE_SCHED_DIRS };

	return t_remove_mode(dfd, target, mode, &cfg, NULL, NULL, rs, sum);
}

static int one(int dfd, enum t_mode mode, unsigned flags)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct t_rep *r;
	struct stat st;
	int ret = -1, rc, dry = !!(flags & DE_F_DRY_RUN);
	size_t i;

	CHECK(build(dfd) == 0);
	rc = run1(dfd, "tree", mode, flags, &rs, &sum);
	CHECK(rc == -EIO);
	for (i = 0; i < 3; i++) {
		r = t_find(&rs, empties[i]);
		CHECK(r && r->op == DE_OP_OPEN && r->err == EACCES);
		CHECK(r->result == (dry ? DE_R_FAILED : DE_R_REMOVED));
		CHECK(t_exists(dfd, empties[i]) == dry);
	}
	r = t_find(&rs, "tree/x");
	CHECK(r && r->result == (dry ? DE_R_NOT_EMPTY : DE_R_REMOVED));
	r = t_find(&rs, "tree/full");
	CHECK(r && r->result == DE_R_FAILED && r->op == DE_OP_OPEN &&
	      r->err == EACCES);
	CHECK(fstatat(dfd, "tree/full", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	      (st.st_mode & 07777) == 0);
	r = t_find(&rs, "tree");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	CHECK(sum.failed == (dry ? 4u : 1u));
	CHECK(t_exists(dfd, "tree/ok") == dry);
	t_reps_free(&rs);

	/* The target itself: rm -rf inacc. */
	rc = run1(dfd, "inacc", mode, flags, &rs, &sum);
	CHECK(rc == (dry ? -EIO : 0));
	r = t_find(&rs, "inacc");
	CHECK(r && r->result == (dry ? DE_R_FAILED : DE_R_REMOVED));
	CHECK(t_exists(dfd, "inacc") == dry);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "case %s, flags %#x\n",
			t_mode_name[mode], flags);
	t_reps_free(&rs);
	(void)fchmodat(dfd, "tree/full", 0700, 0);
	for (i = 0; i < 3; i++)
		(void)fchmodat(dfd, empties[i], 0700, 0);
	(void)fchmodat(dfd, "inacc", 0700, 0);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "inacc");
	return ret;
}

static int run(void)
{
	static const unsigned fl[] = { 0, DE_F_MAKE_WRITABLE, DE_F_DRY_RUN };
	int ret = T_PASS, dfd;
	size_t m, f;

	dfd = open(t_base, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return T_FAIL;
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		for (f = 0; f < sizeof(fl) / sizeof(fl[0]); f++)
			if (one(dfd, modes[m], fl[f]))
				ret = T_FAIL;
	close(dfd);
	return ret;
}

int test(int dfd)
{
	return t_as_nobody(dfd, run);
}

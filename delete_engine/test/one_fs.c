/* one_fs: with DE_F_ONE_FILE_SYSTEM, a directory on another file system is
 * reported DE_R_OTHER_FS and left alone, both inside the tree and as a
 * target itself.  Needs root for the tmpfs mount; exit 77 otherwise. */
#include "tutil.h"

int test(int dfd)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct t_rep *r;
	int ret = T_FAIL, t = -1, m = -1, rc;

	t = t_dir(dfd, "tree");
	CHECK(t >= 0);
	CHECK(t_mixed(t, "plain", 1, 2) == 0);
	CHECK(mkdirat(t, "other", 0755) == 0);
	m = t_tmpfs("tree/other");
	if (m < 0) {
		ret = T_SKIP;
		goto out;
	}
	CHECK(t_mixed(m, "sub", 1, 2) == 0);
	rc = t_remove(dfd, "tree", 2, DE_F_ONE_FILE_SYSTEM, -1, &rs, &sum);
	CHECK(rc == 0);
	r = t_find(&rs, "tree/other");
	CHECK(r && r->result == DE_R_OTHER_FS);
	CHECK(sum.mounts == 1);
	CHECK(t_exists(m, "sub/a"));
	CHECK(!t_exists(dfd, "tree/plain"));
	t_reps_free(&rs);
	/* The mount point as a direct target, dirfd = tree. */
	rc = t_remove(t, "other", 1, DE_F_ONE_FILE_SYSTEM, -1, &rs, &sum);
	CHECK(rc == 0);
	r = t_find(&rs, "other");
	CHECK(r && r->result == DE_R_OTHER_FS);
	CHECK(t_exists(m, "sub/a"));
	ret = T_PASS;
out:
	t_reps_free(&rs);
	if (t >= 0)
		close(t);
	t_umount(m);
	return ret;
}

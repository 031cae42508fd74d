/* perms: as a non-root user (root forks and becomes nobody), an unreadable
 * and an unwritable directory fail per entry with EACCES, their ancestors
 * are kept as not-empty without ENOTEMPTY noise, everything else goes;
 * with DE_F_MAKE_WRITABLE the unwritable one is emptied too, but the
 * unreadable one still fails (make_writable.c has the details). */
#include "tutil.h"

static int build(int dfd)
{
	int t = t_dir(dfd, "tree"), d, rc = 0;

	if (t < 0)
		return -1;
	rc |= t_mixed(t, "ok", 2, 3);
	d = t_dir(t, "unread");
	rc |= d < 0 || t_file(d, "f");
	if (d >= 0)
		close(d);
	rc |= fchmodat(t, "unread", 0, 0);
	d = t_dir(t, "unwrit");
	rc |= d < 0 || t_file(d, "f1") || t_file(d, "f2");
	if (d >= 0)
		close(d);
	rc |= fchmodat(t, "unwrit", 0555, 0);
	close(t);
	return rc ? -1 : 0;
}

static int run(void)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct t_rep *r;
	int ret = T_FAIL, dfd, rc;
	size_t i;

	dfd = open(t_base, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return T_FAIL;
	CHECK(build(dfd) == 0);
	rc = t_remove(dfd, "tree", 2, 0, -1, &rs, &sum);
	CHECK(rc == -EIO);
	r = t_find(&rs, "tree/unread");
	CHECK(r && r->result == DE_R_FAILED && r->op == DE_OP_OPEN &&
	      r->err == EACCES);
	r = t_find(&rs, "tree/unwrit/f1");
	CHECK(r && r->result == DE_R_FAILED && r->op == DE_OP_UNLINK &&
	      r->err == EACCES);
	r = t_find(&rs, "tree/unwrit");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	r = t_find(&rs, "tree");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	CHECK(sum.failed == 3 && sum.not_empty == 2);
	for (i = 0; i < rs.n; i++)
		CHECK(rs.v[i].err != ENOTEMPTY);
	CHECK(!t_exists(dfd, "tree/ok"));
	CHECK(t_exists(dfd, "tree/unwrit/f2"));
	t_reps_free(&rs);
	rc = t_remove(dfd, "tree", 2, DE_F_MAKE_WRITABLE, -1, &rs, &sum);
	CHECK(rc == -EIO);
	r = t_find(&rs, "tree/unread");
	CHECK(r && r->result == DE_R_FAILED && r->op == DE_OP_OPEN &&
	      r->err == EACCES);
	CHECK(sum.failed == 1 && sum.not_empty == 1);
	CHECK(!t_exists(dfd, "tree/unwrit"));
	CHECK(t_exists(dfd, "tree/unread"));
	/* Again, fresh, in one pass and ordered. */
	t_reps_free(&rs);
	CHECK(fchmodat(dfd, "tree/unread", 0700, 0) == 0);
	CHECK(t_remove(dfd, "tree", 2, 0, -1, NULL, &sum) == 0);
	CHECK(build(dfd) == 0);
	rc = t_remove(dfd, "tree", 2, DE_F_MAKE_WRITABLE | DE_F_ORDERED, -1,
		      NULL, &sum);
	CHECK(rc == -EIO);
	CHECK(sum.failed == 1 && t_exists(dfd, "tree/unread") &&
	      !t_exists(dfd, "tree/unwrit"));
	ret = T_PASS;
out:
	t_reps_free(&rs);
	close(dfd);
	return ret;
}

int test(int dfd)
{
	return t_as_nobody(dfd, run);
}

/* make_writable: as a non-root user (root forks and becomes nobody),
 * DE_F_MAKE_WRITABLE adds only the owner's write bit, and only to our own
 * directories that lack it, as rsync does: 0555 and 0500 directories are
 * emptied and removed, while a 000 and a 0300 one (unreadable) fail with
 * EACCES on open and keep their mode and their contents.  A dry run with
 * the flag reports exactly what the real run then does: the same paths
 * with the same results (issue 22: the engine made unreadable directories
 * u+rwx and emptied them, which stock rsync does not, and which its own
 * dry run could not list). */
#include "tutil.h"

static int sub(int t, const char *name, mode_t mode)
{
	int d = t_dir(t, name), rc;

	if (d < 0)
		return -1;
	rc = t_file(d, "f1") || t_file(d, "f2") || t_mixed(d, "deeper", 1, 2);
	close(d);
	return rc || fchmodat(t, name, mode, 0) ? -1 : 0;
}

static int build(int dfd)
{
	int t = t_dir(dfd, "tree"), rc;

	if (t < 0)
		return -1;
	rc = t_mixed(t, "ok", 1, 2) || sub(t, "m000", 0) ||
	     sub(t, "m300", 0300) || sub(t, "m500", 0500) ||
	     sub(t, "m555", 0555);
	close(t);
	return rc ? -1 : 0;
}

static mode_t mode_of(int dfd, const char *path)
{
	struct stat st;

	return fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) ? (mode_t)-1 :
		st.st_mode & 07777;
}

static int run(void)
{
	struct t_reps dry = { 0 }, real = { 0 };
	struct de_summary dsum, rsum;
	unsigned fl = DE_F_MAKE_WRITABLE | DE_F_ORDERED;
	int ret = T_FAIL, dfd, rc;
	struct t_rep *r;
	size_t i;

	dfd = open(t_base, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return T_FAIL;
	CHECK(build(dfd) == 0);
	rc = t_remove(dfd, "tree", 2, fl | DE_F_DRY_RUN, -1, &dry, &dsum);
	CHECK(rc == -EIO);
	CHECK(mode_of(dfd, "tree/m500") == 0500);	/* a dry run changes nothing */
	rc = t_remove(dfd, "tree", 2, fl, -1, &real, &rsum);
	CHECK(rc == -EIO);
	for (i = 0; i < 2; i++) {
		const char *p = i ? "tree/m300" : "tree/m000";

		r = t_find(&real, p);
		CHECK(r && r->result == DE_R_FAILED && r->op == DE_OP_OPEN &&
		      r->err == EACCES);
		CHECK(mode_of(dfd, p) == (i ? 0300 : 0));
	}
	CHECK(!t_exists(dfd, "tree/m500") && !t_exists(dfd, "tree/m555") &&
	      !t_exists(dfd, "tree/ok"));
	r = t_find(&real, "tree");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	/* The dry run said the same, entry by entry. */
	CHECK(dry.n == real.n);
	for (i = 0; i < dry.n; i++) {
		if (strcmp(dry.v[i].path, real.v[i].path) ||
		    dry.v[i].result != real.v[i].result ||
		    dry.v[i].err != real.v[i].err) {
			fprintf(stderr, "dry %s %s, real %s %s\n", dry.v[i].path,
				de_result_name(dry.v[i].result), real.v[i].path,
				de_result_name(real.v[i].result));
			goto out;
		}
	}
	CHECK(dsum.removed_total == rsum.removed_total &&
	      dsum.failed == rsum.failed && dsum.not_empty == rsum.not_empty);
	ret = T_PASS;
out:
	t_reps_free(&dry);
	t_reps_free(&real);
	close(dfd);
	return ret;
}

int test(int dfd)
{
	return t_as_nobody(dfd, run);
}

/* btrfs_order: on btrfs the engine removes in canonical order (each
 * directory emptied just before its rmdir) without DE_F_ORDERED, so the
 * reports arrive in that order; with DE_F_NO_P2_GATE the parallel schedule
 * still removes everything, as does the portable path (which knows no
 * file system types, so only the removal is checked there).  Needs root
 * for a loop-mounted btrfs (exit 77 without root or mkfs.btrfs). */
#include "tutil.h"

static int check_removal(int wd, const char *name, unsigned flags,
			 int canonical)
{
	struct t_names ref = { 0 };
	struct t_reps rs = { 0 };
	struct de_summary sum;
	int ret = T_FAIL, rc;
	size_t i;

	CHECK(t_mixed(wd, name, 4, 5) == 0);	/* 781 dirs */
	t_canon(wd, name, name, &ref);
	rc = t_remove(wd, name, 2, flags, -1, &rs, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(wd, name));
	CHECK(rs.n == ref.n);
	CHECK(sum.failed == 0 && sum.not_empty == 0);
	for (i = 0; i < rs.n; i++) {
		CHECK(rs.v[i].result == DE_R_REMOVED);
		if (!canonical || !strcmp(rs.v[i].path, ref.v[i]))
			continue;
		fprintf(stderr, "%s at %zu: got %s want %s\n", name, i,
			rs.v[i].path, ref.v[i]);
		goto out;
	}
	ret = T_PASS;
out:
	t_reps_free(&rs);
	t_names_free(&ref);
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL, wd = -1, canonical = 1;

#ifdef DE_PORTABLE
	canonical = 0;
#endif
	(void)dfd;	/* the trees go on the btrfs, in the temp dir's mnt */
	wd = t_loop_mount("256M", "mkfs.btrfs -q -f");
	if (wd < 0) {
		ret = T_SKIP;
		goto out;
	}
	CHECK(check_removal(wd, "tree", 0, canonical) == T_PASS);
	CHECK(check_removal(wd, "parallel", DE_F_NO_P2_GATE, 0) == T_PASS);
	ret = T_PASS;
out:
	t_umount(wd);
	return ret;
}

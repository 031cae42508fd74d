/* mount: a tmpfs mounted inside the tree, and a same-device bind mount,
 * are not entered (reported DE_R_MOUNT, files in them survive, the parent
 * is kept not-empty).  Needs root; exit 77 otherwise. */
#include "tutil.h"
#include <sys/mount.h>

int test(int dfd)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct t_rep *r;
	char bind[4200], src[4200];
	int ret = T_FAIL, m = -1, rc, bound = 0;

	CHECK(mkdirat(dfd, "tree", 0755) == 0);
	CHECK(t_mixed(dfd, "tree/plain", 2, 2) == 0);
	CHECK(t_paths(dfd, "tree/mnt/", "tree/bind/", NULL) == 0);
	CHECK(t_mixed(dfd, "bsrc", 1, 2) == 0);
	m = t_tmpfs("tree/mnt");
	if (m < 0) {
		ret = T_SKIP;
		goto out;
	}
	CHECK(t_file(m, "keep") == 0);
	snprintf(bind, sizeof(bind), "%s/tree/bind", t_base);
	snprintf(src, sizeof(src), "%s/bsrc", t_base);
	bound = mount(src, bind, NULL, MS_BIND, NULL) == 0;
	rc = t_remove(dfd, "tree", 2, 0, -1, &rs, &sum);
#ifdef DE_PORTABLE
	/*
	 * Without statx a same-device bind mount looks like a directory
	 * whose inode changed after listing: refused with ESTALE (and so
	 * still not entered).
	 */
	CHECK(rc == 0 || (bound && rc == -EIO));
#else
	CHECK(rc == 0);
#endif
	r = t_find(&rs, "tree/mnt");
	CHECK(r && r->result == DE_R_MOUNT);
	CHECK(t_exists(m, "keep"));
	if (bound) {
		r = t_find(&rs, "tree/bind");
#ifdef DE_PORTABLE
		CHECK(r && (r->result == DE_R_MOUNT ||
			    (r->result == DE_R_FAILED && r->err == ESTALE)));
#else
		CHECK(r && r->result == DE_R_MOUNT);
#endif
		CHECK(t_count(dfd, "bsrc") == t_count(dfd, "tree/bind"));
	}
	r = t_find(&rs, "tree");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	CHECK(!t_exists(dfd, "tree/plain"));
	ret = T_PASS;
out:
	t_reps_free(&rs);
	if (bound && umount2(bind, MNT_DETACH))
		fprintf(stderr, "umount bind failed\n");
	t_umount(m);
	return ret;
}

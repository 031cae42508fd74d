/* symlink_outside: symlinks to a directory outside the tree (and to a
 * file outside) are removed as links; their targets stay intact. */
#include "tutil.h"

int test(int dfd)
{
	struct de_summary sum;
	int ret = T_FAIL, rc;
	char target[4200];

	CHECK(t_paths(dfd, "outside/sentinel", "tree/sub/", NULL) == 0);
	snprintf(target, sizeof(target), "%s/outside", t_base);
	CHECK(symlinkat(target, dfd, "tree/abs-link") == 0);
	CHECK(symlinkat("../../outside", dfd, "tree/sub/rel-link") == 0);
	CHECK(symlinkat("../../outside/sentinel", dfd,
			"tree/sub/file-link") == 0);
	rc = t_remove(dfd, "tree", 2, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(t_exists(dfd, "outside/sentinel"));
	CHECK(sum.removed[DE_T_SYMLINK] == 3);
	/* A symlink given as the target itself is removed, not followed. */
	CHECK(symlinkat("outside", dfd, "top-link") == 0);
	rc = t_remove(dfd, "top-link", 2, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "top-link"));
	CHECK(t_exists(dfd, "outside/sentinel"));
	ret = T_PASS;
out:
	return ret;
}

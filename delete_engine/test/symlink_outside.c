/* symlink_outside: symlinks to a directory outside the tree (and to a
 * file outside) are removed as links; their targets stay intact. */
#include "tutil.h"

int main(void)
{
	struct de_summary sum;
	int ret = T_FAIL, dfd, out_d = -1, tree = -1, sub = -1, rc;
	char target[4200];

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	out_d = t_dir(dfd, "outside");
	CHECK(out_d >= 0);
	CHECK(t_file(out_d, "sentinel") == 0);
	tree = t_dir(dfd, "tree");
	CHECK(tree >= 0);
	sub = t_dir(tree, "sub");
	CHECK(sub >= 0);
	snprintf(target, sizeof(target), "%s/outside", t_base);
	CHECK(symlinkat(target, tree, "abs-link") == 0);
	CHECK(symlinkat("../../outside", sub, "rel-link") == 0);
	CHECK(symlinkat("../../outside/sentinel", sub, "file-link") == 0);
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
	if (sub >= 0)
		close(sub);
	if (tree >= 0)
		close(tree);
	if (out_d >= 0)
		close(out_d);
	close(dfd);
	t_cleanup();
	return ret;
}

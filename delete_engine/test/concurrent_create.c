/* concurrent_create: entries created in the tree while the engine runs
 * cause no crash or hang; leftovers are reported as failed rmdir
 * (ENOTEMPTY) or kept-not-empty, and a second run removes everything. */
#include "tutil.h"

static int g_dfd;

static void *creator(void *arg)
{
	char nm[64];
	unsigned i = 0;

	(void)arg;
	while (!atomic_load(&t_stop)) {
		int fd = openat(g_dfd, "tree/d1", O_RDONLY | O_DIRECTORY);

		if (fd >= 0) {
			snprintf(nm, sizeof(nm), "new%u", i++);
			if (i % 3)
				(void)t_file(fd, nm);
			else
				(void)mkdirat(fd, nm, 0755);
			close(fd);
		}
		if (mkdirat(g_dfd, "tree/late", 0755) == 0)
			(void)t_file(g_dfd, "tree/late/f");
	}
	return NULL;
}

int test(int dfd)
{
	struct t_reps rs = { 0 };
	int ret = T_FAIL, rc, iter;
	size_t i;

	g_dfd = dfd;
	for (iter = 0; iter < 20; iter++) {
		CHECK(t_mixed(dfd, "tree", 3, 4) == 0);
		rc = t_remove_racing(creator, dfd, "tree",
				     iter % 2 ? DE_F_ORDERED : 0, &rs);
		CHECK(rc == 0 || rc == -EIO);
		for (i = 0; i < rs.n; i++) {
			struct t_rep *r = &rs.v[i];

			if (r->result == DE_R_FAILED)
				CHECK(r->op == DE_OP_RMDIR &&
				      (r->err == ENOTEMPTY || r->err == EEXIST));
			else
				CHECK(r->result == DE_R_REMOVED ||
				      r->result == DE_R_NOT_EMPTY ||
				      r->result == DE_R_VANISHED);
		}
		t_reps_free(&rs);
		rc = t_remove(dfd, "tree", 2, 0, -1, NULL, NULL);
		CHECK(rc == 0 || rc == -ENOENT);
		CHECK(!t_exists(dfd, "tree"));
	}
	ret = T_PASS;
out:
	t_reps_free(&rs);
	return ret;
}

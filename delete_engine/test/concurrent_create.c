/* concurrent_create: entries created in the tree while the engine runs
 * cause no crash or hang; leftovers are reported as failed rmdir
 * (ENOTEMPTY) or kept-not-empty, and a second run removes everything.
 * The creator has made an entry before each run starts, so the engine
 * meets its entries every time, and it must go on creating while runs
 * are under way: a run that never overlapped one would prove nothing. */
#include "tutil.h"

#include <sched.h>

static int g_dfd;
static atomic_uint made;	/* entries the creator has made */

static void *creator(void *arg)
{
	char nm[64];
	unsigned i = 0;

	(void)arg;
	while (!atomic_load(&t_stop)) {
		int fd = openat(g_dfd, "tree/d1", O_RDONLY | O_DIRECTORY);

		if (fd >= 0) {
			snprintf(nm, sizeof(nm), "new%u", i++);
			if (i % 3 ? t_file(fd, nm) == 0 : mkdirat(fd, nm, 0755) == 0)
				atomic_fetch_add(&made, 1);
			close(fd);
		}
		if (mkdirat(g_dfd, "tree/late", 0755) == 0) {
			atomic_fetch_add(&made, 1);
			if (t_file(g_dfd, "tree/late/f") == 0)
				atomic_fetch_add(&made, 1);
		}
	}
	return NULL;
}

/* Is r one of the creator's entries? */
static int created(const struct t_rep *r)
{
	return strstr(r->path, "/new") || !strncmp(r->path, "tree/late", 9);
}

int test(int dfd)
{
	struct t_reps rs = { 0 };
	int ret = T_FAIL, rc, iter, met;
	unsigned before, during = 0;
	double t0;
	pthread_t th;
	size_t i;

	g_dfd = dfd;
	for (iter = 0; iter < 20; iter++) {
		CHECK(t_mixed(dfd, "tree", 3, 4) == 0);
		atomic_store(&t_stop, 0);
		atomic_store(&made, 0);
		CHECK(pthread_create(&th, NULL, creator, NULL) == 0);
		t0 = t_now();
		while (!(before = atomic_load(&made)) && t_now() - t0 < 10)
			sched_yield();
		rc = -1;
		if (before) {
			rc = t_remove(dfd, "tree", 2, iter % 2 ? DE_F_ORDERED : 0,
				      -1, &rs, NULL);
			during += atomic_load(&made) - before;
		}
		atomic_store(&t_stop, 1);
		pthread_join(th, NULL);
		CHECK(before > 0);
		CHECK(rc == 0 || rc == -EIO);
		met = 0;
		for (i = 0; i < rs.n; i++) {
			struct t_rep *r = &rs.v[i];

			met += created(r);
			if (r->result == DE_R_FAILED)
				CHECK(r->op == DE_OP_RMDIR &&
				      (r->err == ENOTEMPTY || r->err == EEXIST));
			else
				CHECK(r->result == DE_R_REMOVED ||
				      r->result == DE_R_NOT_EMPTY ||
				      r->result == DE_R_VANISHED);
		}
		CHECK(met > 0);
		t_reps_free(&rs);
		rc = t_remove(dfd, "tree", 2, 0, -1, NULL, NULL);
		CHECK(rc == 0 || rc == -ENOENT);
		CHECK(!t_exists(dfd, "tree"));
	}
	/* Over 20 runs, the creator made entries while one was under way. */
	CHECK(during > 0);
	ret = T_PASS;
out:
	t_reps_free(&rs);
	return ret;
}

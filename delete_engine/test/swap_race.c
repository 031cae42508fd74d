/* swap_race: while the engine runs, a second thread keeps exchanging
 * directories in the tree with symlinks to a sentinel tree outside it
 * (renameat2 RENAME_EXCHANGE, over 1,000 swaps in all).  The sentinel tree
 * must stay untouched whatever the engine reports. */
#include "tutil.h"
#include <sys/syscall.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static atomic_long swaps;
static int g_dfd;

static void *swapper(void *arg)
{
	static const char *pairs[][2] = {
		{ "tree/v", "tree/v.lnk" },
		{ "tree/w/x", "tree/w/x.lnk" },
		{ "tree/w/x/y", "tree/w/y.lnk" },
	};
	unsigned i = 0;

	(void)arg;
	while (!atomic_load(&t_stop)) {
		const char **p = pairs[i++ % 3];

		if (syscall(SYS_renameat2, g_dfd, p[0], g_dfd, p[1],
			    RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&swaps, 1);
	}
	return NULL;
}

static int build(int dfd, const char *base)
{
	char tgt[4300];
	int t, d, rc = 0, i;

	t = t_dir(dfd, "tree");
	if (t < 0)
		return -1;
	snprintf(tgt, sizeof(tgt), "%s/outside", base);
	rc |= t_mixed(t, "v", 2, 3);
	rc |= symlinkat(tgt, t, "v.lnk");
	d = t_dir(t, "w");
	if (d >= 0) {
		int x = t_dir(d, "x");

		rc |= x < 0;
		if (x >= 0) {
			rc |= t_mixed(x, "y", 1, 3);
			for (i = 0; i < 20; i++) {
				char nm[16];

				snprintf(nm, sizeof(nm), "f%d", i);
				rc |= t_file(x, nm);
			}
			close(x);
		}
		rc |= symlinkat(tgt, d, "x.lnk");
		rc |= symlinkat(tgt, d, "y.lnk");
		close(d);
	} else {
		rc = -1;
	}
	close(t);
	return rc ? -1 : 0;
}

int test(int dfd)
{
	int ret = T_FAIL, iter, rc;
	long sentinel;

	g_dfd = dfd;
	CHECK(t_mixed(dfd, "outside", 2, 4) == 0);
	sentinel = t_count(dfd, "outside");
	for (iter = 0; iter < 400 &&
	     (iter < 50 || atomic_load(&swaps) < 1000); iter++) {
		CHECK(build(dfd, t_base) == 0);
		rc = t_remove_racing(swapper, dfd, "tree",
				     iter % 2 ? DE_F_ORDERED : 0, NULL);
		CHECK(rc == 0 || rc == -EIO);
		CHECK(t_count(dfd, "outside") == sentinel);
		t_cleanup_sub(dfd, "tree");
	}
	fprintf(stderr, "%d runs, %ld swaps\n", iter, atomic_load(&swaps));
	CHECK(atomic_load(&swaps) >= 1000);
	ret = T_PASS;
out:
	return ret;
}

/* flat: 20,000 files in one directory are all removed, with 2 threads,
 * with and without splitting the directory across workers, and the
 * summary counts them per type. */
#include "tutil.h"

int test(int dfd)
{
	struct de_summary sum;
	int ret = T_FAIL, rc, pass;

	for (pass = 0; pass < 2; pass++) {
		CHECK(mkdirat(dfd, "flat", 0755) == 0);
		CHECK(t_files(dfd, "flat/file-%05d", 20000) == 0);
		CHECK(symlinkat("file-00001", dfd, "flat/link") == 0);
		CHECK(mkfifoat(dfd, "flat/fifo", 0644) == 0);
		rc = t_remove(dfd, "flat", 2, pass ? DE_F_SPLIT : DE_F_NO_SPLIT,
			      -1, NULL, &sum);
		CHECK(rc == 0);
		CHECK(!t_exists(dfd, "flat"));
		CHECK(sum.removed[DE_T_FILE] == 20000);
		CHECK(sum.removed[DE_T_SYMLINK] == 1);
		CHECK(sum.removed[DE_T_SPECIAL] == 1);
		CHECK(sum.removed[DE_T_DIR] == 1);
		CHECK(sum.removed_total == 20003 && sum.failed == 0);
	}
	ret = T_PASS;
out:
	return ret;
}

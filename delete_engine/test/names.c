/* names: newline, non-UTF-8 bytes, 255-byte names, leading dashes and
 * spaces are removed and reported byte-exactly. */
#include "tutil.h"

int test(int dfd)
{
	static const char *names[] = { "new\nline", "\xff\xfe\x80", "-rf",
				       "--", " lead space", "trail ", "*?[",
				       "\\" };
	struct t_reps rs = { 0 };
	struct de_summary sum;
	char longname[256];
	int ret = T_FAIL, top = -1, d, rc;
	size_t i;
	char path[600];

	top = t_dir(dfd, "-tree");
	CHECK(top >= 0);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK(t_file(top, names[i]) == 0);
	}
	memset(longname, 'L', 255);
	longname[255] = 0;
	d = t_dir(top, longname);
	CHECK(d >= 0);
	longname[0] = 'F';
	rc = t_file(d, longname);
	close(d);
	CHECK(rc == 0);
	d = t_dir(top, "dir\nwith\nnewlines\xff");
	CHECK(d >= 0);
	rc = t_file(d, "x");
	close(d);
	CHECK(rc == 0);
	rc = t_remove(dfd, "-tree", 2, DE_F_ORDERED, -1, &rs, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "-tree"));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "-tree/%s", names[i]);
		CHECK(t_find(&rs, path) != NULL);
	}
	longname[0] = 'L';
	snprintf(path, sizeof(path), "-tree/%s/F%s", longname, longname + 1);
	CHECK(t_find(&rs, path) != NULL);
	CHECK(t_find(&rs, "-tree/dir\nwith\nnewlines\xff/x") != NULL);
	CHECK(sum.removed_total == rs.n && sum.failed == 0);
	ret = T_PASS;
out:
	t_reps_free(&rs);
	if (top >= 0)
		close(top);
	return ret;
}

/* trunc_step: files bigger than the step are shrunk step by step after
 * their unlink: the number of ftruncate steps per file is exact (counted
 * through the fault hook's DE_OP_TRUNCATE), a file no bigger than the
 * step is not truncated, a file with another hard link is never
 * truncated (the other link keeps its size), a file whose unlink fails
 * keeps its size, and everything else is removed. */
#include "tutil.h"

#define MiB (1024L * 1024)

static const char *names[] = { "big", "exact", "linked", "data", "fails" };
#define NNAMES (sizeof names / sizeof names[0])
static int steps[NNAMES];

static int hook(void *arg, int op, const char *name)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < NNAMES; i++)
		if (!strcmp(name, names[i]))
			break;
	if (op == DE_OP_TRUNCATE && i < NNAMES)
		__atomic_add_fetch(&steps[i], 1, __ATOMIC_RELAXED);
	if (op == DE_OP_UNLINK && i < NNAMES && !strcmp(name, "fails"))
		return EIO;
	return 0;
}

/* A file of size bytes, sparse, or with data written when data. */
static int mkfile(int dfd, const char *name, off_t size, int data)
{
	static char buf[64 * 1024];
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	off_t off;

	if (fd < 0)
		return -1;
	for (off = 0; data && off < size; off += (off_t)sizeof buf)
		if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			goto bad;
	if (ftruncate(fd, size))
		goto bad;
	close(fd);
	return 0;
bad:
	close(fd);
	return -1;
}

int main(void)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .trunc_step = 4 * MiB, .fault = hook };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_summary sum;
	struct stat st;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, dfd, sub = -1, rc;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	CHECK((sub = t_dir(dfd, "tree")) >= 0);
	CHECK(mkfile(sub, "big", 10 * MiB, 0) == 0);	 /* 10 -> 6 -> 2 */
	CHECK(mkfile(sub, "exact", 4 * MiB, 0) == 0);	 /* not > step */
	CHECK(mkfile(sub, "linked", 10 * MiB, 0) == 0);
	CHECK(linkat(sub, "linked", dfd, "keep", 0) == 0);
	CHECK(mkfile(sub, "data", 9 * MiB, 1) == 0);	 /* 9 -> 5 -> 1 */
	CHECK(mkfile(sub, "fails", 10 * MiB, 0) == 0);
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = de_remove(ctx, dfd, &t, 1, NULL, &sum);
	CHECK(rc == 0 || rc == -EIO);
	CHECK(sum.failed == 1 && sum.not_empty == 1);
	CHECK(sum.removed_total == 4);
	CHECK(steps[0] == 2 && steps[1] == 0 && steps[2] == 0 && steps[3] == 2);
	CHECK(steps[4] == 0);
	/* The other link and the file that could not be removed are whole. */
	CHECK(fstatat(dfd, "keep", &st, 0) == 0 && st.st_size == 10 * MiB);
	CHECK(st.st_nlink == 1);
	CHECK(fstatat(sub, "fails", &st, 0) == 0 && st.st_size == 10 * MiB);
	CHECK(t_count(dfd, "tree") == 2);
	ret = T_PASS;
out:
	if (ret != T_PASS)
		fprintf(stderr, "trunc_step: steps big %d exact %d linked %d data %d fails %d\n",
			steps[0], steps[1], steps[2], steps[3], steps[4]);
	de_ctx_free(ctx);
	if (sub >= 0)
		close(sub);
	close(dfd);
	t_cleanup();
	return ret;
}

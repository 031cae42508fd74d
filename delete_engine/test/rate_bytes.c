/* rate_bytes: the engine frees at most rate_bytes of allocated file
 * space per second: files whose st_blocks add up to B bytes take at
 * least (B - the biggest file) / rate_bytes seconds, and a big file
 * freed in trunc_step steps is paced step by step, so that one file
 * alone takes (its size - one step) / rate_bytes.  Sleeps only run long,
 * so the lower bounds are exact; nothing is asserted from above. */
#include "tutil.h"

#include <time.h>

#define MiB (1024L * 1024)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A file with size bytes of data; adds its allocated bytes to *alloc
 * and keeps the largest in *max. */
static int mkdata(int dfd, const char *name, long size, double *alloc, double *max)
{
	static char buf[64 * 1024];
	struct stat st;
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	long off;

	if (fd < 0)
		return -1;
	for (off = 0; off < size; off += (long)sizeof buf)
		if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf)
			break;
	if (off < size || fsync(fd) || fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	close(fd);
	*alloc += (double)st.st_blocks * 512;
	if ((double)st.st_blocks * 512 > *max)
		*max = (double)st.st_blocks * 512;
	return 0;
}

static int run(const struct de_config *cfg, int dfd, double *took)
{
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct de_summary sum;
	de_ctx *ctx;
	double t0;
	int rc;

	if (de_ctx_new(&ctx, cfg))
		return -1;
	t0 = now_s();
	rc = de_remove(ctx, dfd, &t, 1, NULL, &sum);
	*took = now_s() - t0;
	de_ctx_free(ctx);
	return rc || t_exists(dfd, "tree") ? -1 : 0;
}

int main(void)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .rate_bytes = 8 * MiB };
	int ret = T_FAIL, dfd, sub = -1, i;
	double alloc = 0, max = 0, took = 0, need = 0;

	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	/* Five 1 MiB files over two workers at 8 MiB/s. */
	CHECK((sub = t_dir(dfd, "tree")) >= 0);
	for (i = 0; i < 5; i++) {
		char name[16];

		snprintf(name, sizeof name, "f%d", i);
		CHECK(mkdata(sub, name, MiB, &alloc, &max) == 0);
	}
	close(sub);
	sub = -1;
	if (alloc < 4 * MiB) {
		fprintf(stderr, "rate_bytes: files take %.0f bytes (compressed?)\n", alloc);
		ret = T_SKIP;
		goto out;
	}
	need = (alloc - max) / cfg.rate_bytes;
	CHECK(run(&cfg, dfd, &took) == 0);
	CHECK(took >= need);

	/* One 8 MiB file in 2 MiB steps at 16 MiB/s: four slots of 2 MiB. */
	alloc = max = 0;
	CHECK((sub = t_dir(dfd, "tree")) >= 0);
	CHECK(mkdata(sub, "big", 8 * MiB, &alloc, &max) == 0);
	close(sub);
	sub = -1;
	cfg.rate_bytes = 16 * MiB;
	cfg.trunc_step = 2 * MiB;
	need = (alloc - 2.0 * MiB) / cfg.rate_bytes;
	CHECK(run(&cfg, dfd, &took) == 0);
	CHECK(took >= need);
	ret = T_PASS;
out:
	if (ret == T_FAIL)
		fprintf(stderr, "rate_bytes: %.0f bytes in %.3f s, needed %.3f s\n",
			alloc, took, need);
	if (sub >= 0)
		close(sub);
	close(dfd);
	t_cleanup();
	return ret;
}

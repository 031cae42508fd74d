/* count: de_count() says how many entries de_remove_sets() of the same
 * sets removes, and reads nothing the removal would not: a symlink to a
 * directory is one entry, a mount point is not entered, a chain 3,000
 * deep is counted with 16 fds, a target of unknown type is looked at, and
 * a directory moved out of the tree while it is counted takes the count
 * no further than where it went.  Its reads are the ones that tell a
 * slow disk: the run after it takes the global schedule unprobed.  The progress hook sees the count grow
 * and can stop it (-ECANCELED).  Then the removal of a counted tree
 * removes exactly that many. */
#include "tutil.h"

#include <sys/resource.h>

#define DEEP 3000

static int stop_at_progress(void *arg, const struct de_progress *p)
{
	uint64_t *seen = arg;

	*seen = p->counted;
	return 1;	/* stop */
}

/* Reads take 3 ms: a progress tick is due after each, and a disk this
 * slow takes the global schedule. */
static int slow_reads(void *arg, int op, const char *name)
{
	struct timespec ms2 = { 0, 3000000 };

	(void)arg;
	(void)name;
	if (op == DE_OP_READ)
		nanosleep(&ms2, NULL);
	return 0;
}

static char from[4200], to[4200];

static int move_away(void *arg, int op, const char *name)
{
	int *armed = arg;

	if (op != DE_OP_READ || strcmp(name, "victim") || !*armed)
		return 0;
	*armed = 0;
	return rename(from, to) ? EPERM : 0;
}

static int count(de_ctx *ctx, int dfd, struct de_target *t, size_t n,
		 uint64_t *out)
{
	struct de_set s = { dfd, t, n };

	return de_count(ctx, &s, 1, NULL, out);
}

static int many(int dfd, const char *dir, int n)
{
	char name[64];
	int i, fd = t_dir(dfd, dir);

	if (fd < 0)
		return -1;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		if (t_file(fd, name)) {
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

/* A chain DEEP directories deep below dfd/name, a file at the bottom. */
static int chain(int dfd, const char *name)
{
	int i, fd = t_dir(dfd, name), next;

	for (i = 0; fd >= 0 && i < DEEP; i++) {
		next = t_dir(fd, "d");
		close(fd);
		fd = next;
	}
	if (fd < 0 || t_file(fd, "bottom"))
		return -1;
	close(fd);
	return 0;
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .progress_ms = 1 };
	struct de_target t[] = {
		{ "tree", DE_T_DIR, 0 }, { "file", DE_T_UNKNOWN, 0 },
		{ "link", DE_T_UNKNOWN, 0 },
	};
	struct de_hooks h = { 0 };
	struct de_summary sum;
	struct rlimit rl, low;
	de_ctx *ctx = NULL;
	uint64_t n = 0, seen = 0;
	int ret = T_FAIL, armed = 1, mfd = -1, tfd = -1, i;

	CHECK(t_paths(dfd, "tree/a/f1", "tree/a/f2", "tree/a/sub/f3",
		      "tree/b/", "tree/c/d/e/f4", "file", "outside/x/y/z",
		      "outside/x/w", NULL) == 0);
	CHECK(symlinkat("outside", dfd, "link") == 0);
	CHECK(symlinkat("../outside", dfd, "tree/a/out") == 0);
	CHECK(de_ctx_new(&ctx, &cfg) == 0);

	/* tree: itself, a, f1, f2, sub, f3, out, b, c, d, e, f4 (12); file;
	 * link: one entry, outside not read. */
	CHECK(count(ctx, dfd, t, 3, &n) == 0);
	CHECK(n == 14);
	CHECK(de_count(ctx, NULL, 0, NULL, &n) == 0 && n == 0);
	CHECK(de_count(NULL, NULL, 0, NULL, &n) == -EINVAL);

	/* A mount point below a target is not entered (as root). */
	CHECK(t_paths(dfd, "tree/m/", NULL) == 0);
	if ((mfd = t_tmpfs("tree/m")) >= 0) {
		CHECK(many(mfd, "in", 10) == 0);
		CHECK(count(ctx, dfd, t, 1, &n) == 0);
		CHECK(n == 13);	/* tree's 12, and m itself */
		t_umount(mfd);
		mfd = -1;
	}

	/* The progress hook sees the count, and stops it: after the first
	 * directory read (big: itself and 50 subdirectories of 100). */
	for (i = 0; i < 50; i++) {
		char sub[32];

		snprintf(sub, sizeof(sub), "big/d%02d", i);
		CHECK(t_paths(dfd, "big/", NULL) == 0 && many(dfd, sub, 100) == 0);
	}
	h.progress = stop_at_progress;
	h.arg = &seen;
	de_ctx_free(ctx);
	ctx = NULL;
	CHECK(de_test_ctx_new(&ctx, &cfg, slow_reads, NULL) == 0);
	{
		struct de_target b = { "big", DE_T_DIR, 0 };
		struct de_set s = { dfd, &b, 1 };

		CHECK(de_count(ctx, &s, 1, &h, &n) == -ECANCELED);
		CHECK(seen == n && n == 51);
	}
	t_cleanup_sub(dfd, "big");

	/* The count's reads tell a slow disk, so the run after it, which
	 * finds the directories cached, still takes the global schedule
	 * without a probe (on ext4, as root). */
	if ((mfd = t_loop_mount("64M", "mkfs.ext4 -q")) >= 0) {
		struct de_target g = { "g", DE_T_DIR, 0 };
		struct de_set s = { mfd, &g, 1 };
		char line[512];

		for (i = 0; i < 10; i++) {
			char sub[32];

			snprintf(sub, sizeof(sub), "g/d%d/f", i);
			CHECK(t_paths(mfd, sub, NULL) == 0);
		}
		CHECK(de_note_read(ctx, mfd, 0, 0) == -1);
		CHECK(de_count(ctx, &s, 1, NULL, &n) == 0 && n == 21);
		CHECK(de_note_read(ctx, mfd, 0, 0) == 1);
		CHECK(de_remove(ctx, mfd, &g, 1, NULL, NULL, &sum) == 0);
		CHECK(sum.removed_total == 21);
		CHECK(de_explain(ctx, line, sizeof(line)) > 0);
		CHECK(strstr(line, "global") && !strstr(line, "first reads"));
		t_umount(mfd);
		mfd = -1;
	}

	/* Any depth, two fds at a time. */
	CHECK(chain(dfd, "deep") == 0);
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	low = rl;
	low.rlim_cur = 16;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	{
		struct de_target d = { "deep", DE_T_DIR, 0 };

		n = 0;
		ret = count(ctx, dfd, &d, 1, &n);
		setrlimit(RLIMIT_NOFILE, &rl);
		CHECK(ret == 0);
		ret = T_FAIL;
		CHECK(n == DEEP + 2);
	}

	/* Moved out mid-count: the count goes no further than the move. */
	CHECK(many(dfd, "outside/crowd", 500) == 0);
	CHECK(t_paths(dfd, "moved/a/victim/s/f", "moved/b/f", NULL) == 0);
	snprintf(from, sizeof(from), "%s/moved/a/victim", t_base);
	snprintf(to, sizeof(to), "%s/outside/crowd/victim", t_base);
	de_ctx_free(ctx);
	ctx = NULL;
	CHECK(de_test_ctx_new(&ctx, &cfg, move_away, &armed) == 0);
	{
		struct de_target m = { "moved", DE_T_DIR, 0 };

		CHECK(count(ctx, dfd, &m, 1, &n) == 0);
		CHECK(armed == 0);
		/* At most: moved, a, b, b/f, victim, s, s/f; none of the
		 * crowd's 500. */
		CHECK(n <= 7);
	}
	de_ctx_free(ctx);
	ctx = NULL;

	/* The removal of the counted tree removes as many. */
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	CHECK(count(ctx, dfd, t, 2, &n) == 0);
	tfd = dfd;
	{
		struct de_set s = { tfd, t, 2 };

		CHECK(de_remove_sets(ctx, &s, 1, NULL, NULL, &sum) == 0);
		CHECK(sum.removed_total == n);
	}
	ret = T_PASS;
out:
	t_umount(mfd);
	de_ctx_free(ctx);
	return ret;
}

/* ask_dir: the ask_dir hook is asked, on the calling thread, before the
 * walk enters a directory that has entries (rmdir 0) and before each
 * rmdir (rmdir 1), the way rm -i asks: a directory's entries come
 * between its two questions, an empty one is asked only the second, and
 * a directory holding something kept is not asked the second at all.
 * dirfd is the parent's fd.  DE_A_KEEP on entering keeps the directory
 * whole (DE_R_KEPT, its parent not empty); on the rmdir, keeps it empty.
 * Run with 1 and 2 threads. */
#include "tutil.h"
#include <pthread.h>

struct st {
	pthread_t self;
	char log[64][64];	/* "D path" enter, "R path" rmdir, "F path" file */
	int n, bad;
};

static void note(struct st *s, char kind, const char *rel)
{
	if (s->n < 64)
		snprintf(s->log[s->n++], sizeof s->log[0], "%c %s", kind, rel);
	if (!pthread_equal(s->self, pthread_self()))
		s->bad = 1;
}

static int at(const struct st *s, const char *line)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->log[i], line))
			return i;
	return -1;
}

static enum de_action ask(void *arg, int dirfd, const char *name,
			  const char *rel, int rmdir)
{
	struct st *s = arg;
	struct stat sb;

	note(s, rmdir ? 'R' : 'D', rel);
	if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode))
		s->bad = 2;
	if (!rmdir && !strcmp(rel, "t/b"))
		return DE_A_KEEP;
	if (rmdir && !strcmp(rel, "t/c"))
		return DE_A_KEEP;
	return DE_A_DELETE;
}

static enum de_action file(void *arg, int dirfd, const char *name,
			   const char *rel, enum de_type type)
{
	(void)dirfd; (void)name; (void)type;
	note(arg, 'F', rel);
	return DE_A_DELETE;
}

static int one(int dfd, unsigned threads)
{
	struct de_config cfg = { .threads = threads, .max_delete = -1 };
	struct st s = { .self = pthread_self() };
	struct de_hooks h = { .arg = &s, .ask_dir = ask, .dispose = file };
	struct de_target t = { "t", DE_T_DIR, 0 };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, rc;

	CHECK(t_paths(dfd, "t/a/x", "t/a/y", "t/b/z", "t/c/w", "t/e/", "t/f",
		      NULL) == 0);
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!s.bad);
	/* Entered before its entries, removed after them. */
	CHECK(at(&s, "D t") == 0);
	CHECK(at(&s, "D t/a") >= 0 && at(&s, "D t/a") < at(&s, "F t/a/x") &&
	      at(&s, "F t/a/y") < at(&s, "R t/a"));
	/* Kept on entering: nothing inside asked about, all of it left. */
	CHECK(at(&s, "D t/b") >= 0 && at(&s, "F t/b/z") < 0 &&
	      at(&s, "R t/b") < 0);
	CHECK(t_exists(dfd, "t/b/z"));
	/* Kept at its rmdir: emptied, left. */
	CHECK(at(&s, "R t/c") > at(&s, "F t/c/w") && t_exists(dfd, "t/c") &&
	      !t_exists(dfd, "t/c/w"));
	/* Empty: only the rmdir is asked. */
	CHECK(at(&s, "D t/e") < 0 && at(&s, "R t/e") >= 0 && !t_exists(dfd, "t/e"));
	/* t holds what was kept: not asked, not removed. */
	CHECK(at(&s, "R t") < 0 && t_exists(dfd, "t"));
	CHECK(!t_exists(dfd, "t/a") && !t_exists(dfd, "t/f"));
	CHECK(sum.kept == 2 && sum.failed == 0);
	ret = T_PASS;
out:
	de_ctx_free(ctx);
	t_cleanup_sub(dfd, "t");
	return ret;
}

int test(int dfd)
{
	int ret = one(dfd, 1);

	return ret == T_PASS ? one(dfd, 2) : ret;
}

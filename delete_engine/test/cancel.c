/* cancel: a progress hook returning non-zero cancels the run: de_remove
 * returns -ECANCELED promptly, nothing crashes or leaks, and a second run
 * removes the rest.  Also checks progress is called on the caller thread. */
#include "tutil.h"
#include <pthread.h>

struct st {
	pthread_t self;
	int calls, bad;
};

static int prog(void *arg, const struct de_progress *p)
{
	struct st *s = arg;

	(void)p;
	if (!pthread_equal(s->self, pthread_self()))
		s->bad = 1;
	return ++s->calls >= 2;
}

static int one(int dfd, unsigned flags)
{
	struct de_config cfg = { .threads = 2, .flags = flags, .max_delete = -1, .progress_ms = 1 };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct st s = { pthread_self(), 0, 0 };
	de_ctx *ctx = NULL;
	int ret = -1, rc;

	h.arg = &s;
	h.progress = prog;
	CHECK(t_mixed(dfd, "tree", 4, 5) == 0);
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, NULL);
	CHECK(rc == -ECANCELED || rc == 0);
	CHECK(s.bad == 0);
	cfg.progress_ms = 0;
	de_ctx_free(ctx);
	ctx = NULL;
	rc = t_remove(dfd, "tree", 2, 0, -1, NULL, NULL);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	ret = 0;
out:
	de_ctx_free(ctx);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL;

	CHECK(one(dfd, 0) == 0);
	CHECK(one(dfd, DE_F_ORDERED) == 0);
	CHECK(one(dfd, DE_F_DRY_RUN) == 0);
	ret = T_PASS;
out:
	return ret;
}

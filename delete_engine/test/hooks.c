/* hooks: enter_dir/leave_dir come in depth-first pre-order, properly
 * nested, on the calling thread, with the listing in canonical order;
 * DE_A_KEEP keeps an entry (its ancestors are kept not-empty), DE_A_DONE
 * (the caller moved it away itself) is reported and counted as removed.
 * Run with and without max_delete. */
#include "tutil.h"
#include <pthread.h>

struct st {
	pthread_t self;
	char stack[64][512];
	int depth, bad, enters;
	int base;
};

static int enter(void *arg, const char *rel, struct de_dirent *e, size_t n)
{
	struct st *s = arg;
	size_t i;

	if (!pthread_equal(s->self, pthread_self()))
		s->bad = 1;
	if (s->depth > 0) {
		/* Pre-order: rel must be a child of the top of the stack. */
		size_t l = strlen(s->stack[s->depth - 1]);

		if (strncmp(rel, s->stack[s->depth - 1], l) || rel[l] != '/' ||
		    strchr(rel + l + 1, '/'))
			s->bad = 2;
	}
	snprintf(s->stack[s->depth++], 512, "%s", rel);
	s->enters++;
	for (i = 0; i < n; i++) {
		if (i > 0 && e[i - 1].type == DE_T_DIR &&
		    e[i].type == DE_T_DIR && strcmp(e[i - 1].name, e[i].name) < 0)
			s->bad = 3;
		if (!strcmp(e[i].name, "keepme"))
			e[i].action = DE_A_KEEP;
		if (!strcmp(e[i].name, "moved")) {
			char from[1024], to[1024];

			snprintf(from, sizeof(from), "%s/%s", rel, e[i].name);
			snprintf(to, sizeof(to), "backup-%d", s->enters);
			if (renameat(s->base, from, s->base, to))
				s->bad = 4;
			e[i].action = DE_A_DONE;
		}
	}
	return 0;
}

static void leave(void *arg, const char *rel)
{
	struct st *s = arg;

	if (s->depth == 0 || strcmp(s->stack[s->depth - 1], rel))
		s->bad = 5;
	else
		s->depth--;
}

static int one(int dfd, long long maxdel)
{
	struct st s;
	struct de_config cfg = { .threads = 2, .max_delete = maxdel };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct t_reps rs = { 0 };
	de_ctx *ctx = NULL;
	int ret = -1, rc;
	long total;

	memset(&s, 0, sizeof(s));
	s.self = pthread_self();
	s.base = dfd;
	h.arg = &s;
	h.enter_dir = enter;
	h.leave_dir = leave;
	CHECK(t_keepme_tree(dfd) == 0);
	CHECK(t_mixed(dfd, "tree/sub/moved", 1, 2) == 0);
	total = t_count(dfd, "tree");
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(rc == 0);
	CHECK(s.bad == 0 && s.depth == 0);
	CHECK(s.enters == 1 + 1 + 3 + 9 + 27 + 1);
	CHECK(t_exists(dfd, "tree/sub/keepme"));
	CHECK(!t_exists(dfd, "tree/sub/x") && !t_exists(dfd, "tree/m"));
	CHECK(sum.kept == 1 && sum.not_empty == 2 && sum.failed == 0);
	/* moved counts once (as a dir), its contents were never seen. */
	CHECK((long)sum.removed_total ==
	      total - 3 - (t_count(dfd, "backup-2") - 1));
	de_ctx_free(ctx);
	ctx = NULL;
	/* Reports come with the hook too: KEEP is reported as kept. */
	h.report = NULL;
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "bad=%d depth=%d enters=%d maxdel=%lld\n",
			s.bad, s.depth, s.enters, maxdel);
	de_ctx_free(ctx);
	t_reps_free(&rs);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "backup-*");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL;

	CHECK(one(dfd, -1) == 0);
	CHECK(one(dfd, 1000000) == 0);
	ret = T_PASS;
out:
	return ret;
}

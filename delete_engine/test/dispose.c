/* dispose: the dispose hook is asked about every non-directory, on the
 * calling thread, in canonical order, with the engine's fd of the entry's
 * own directory.  DE_A_DONE (the caller moved it away through that fd) is
 * reported DE_R_DONE and lets the directories go; DE_A_DELETE has the
 * engine unlink it; DE_A_KEEP leaves it and keeps its ancestors.  In a
 * dry run the hook is asked the same questions and nothing changes.  Run
 * with 1 and 2 threads, with and without max_delete. */
#include "tutil.h"
#include <pthread.h>

struct st {
	pthread_t self;
	struct t_names want;	/* the non-directories, canonical order */
	size_t next;
	int bak;		/* where DE_A_DONE entries are moved */
	int moved, dones, reported_done, bad, dry;
	char why[256];
};

static void fail(struct st *s, const char *why, const char *rel)
{
	if (!s->bad) {
		s->bad = 1;
		snprintf(s->why, sizeof(s->why), "%s: %s", why, rel);
	}
}

static enum de_action dispose(void *arg, int dirfd, const char *name,
			      const char *rel, enum de_type type)
{
	struct st *s = arg;
	const char *slash = strrchr(rel, '/');
	struct stat st;
	char to[32];

	if (!pthread_equal(s->self, pthread_self()))
		fail(s, "not the calling thread", rel);
	if (s->next >= s->want.n || strcmp(s->want.v[s->next], rel))
		fail(s, "out of order", rel);
	s->next++;
	if (strcmp(slash ? slash + 1 : rel, name))
		fail(s, "name is not the last part of relpath", rel);
	/* dirfd is name's own directory: the entry is right there. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    S_ISDIR(st.st_mode) || (type == DE_T_SYMLINK) != !!S_ISLNK(st.st_mode))
		fail(s, "not found as a non-directory through dirfd", rel);
	if (!strcmp(name, "keepme"))
		return DE_A_KEEP;
	if (!strcmp(name, "a") || !strcmp(name, "lnk"))
		return DE_A_DELETE;
	s->dones++;
	if (s->dry)
		return DE_A_DONE;
	snprintf(to, sizeof(to), "%d", s->moved);
	if (renameat(dirfd, name, s->bak, to)) {
		fail(s, "renameat", rel);
		return DE_A_KEEP;
	}
	s->moved++;
	return DE_A_DONE;
}

static void report(void *arg, const struct de_report *r)
{
	struct st *s = arg;

	if (r->result == DE_R_DONE) {
		s->reported_done++;
		if (r->type == DE_T_DIR)
			fail(s, "a directory reported DONE", r->path);
	}
	if (r->dry_run != s->dry)
		fail(s, "dry_run flag", r->path);
}

static int one(int dfd, unsigned threads, long long maxdel, int dry)
{
	struct st s;
	struct de_config cfg = { .threads = threads, .max_delete = maxdel,
				 .flags = dry ? DE_F_DRY_RUN : 0 };
	struct de_hooks h;
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct t_names all = { 0 };
	de_ctx *ctx = NULL;
	int ret = -1, rc;
	long total, nbak;
	size_t i;

	memset(&s, 0, sizeof(s));
	memset(&h, 0, sizeof(h));
	s.self = pthread_self();
	s.dry = dry;
	s.bak = -1;
	h.arg = &s;
	h.dispose = dispose;
	h.report = report;
	CHECK(t_keepme_tree(dfd) == 0);
	s.bak = t_dir(dfd, "bak");
	CHECK(s.bak >= 0);
	t_canon(dfd, "tree", "tree", &all);
	for (i = 0; i < all.n; i++) {
		struct stat st;

		CHECK(fstatat(dfd, all.v[i], &st, AT_SYMLINK_NOFOLLOW) == 0);
		if (!S_ISDIR(st.st_mode))
			t_names_add(&s.want, all.v[i]);
	}
	total = t_count(dfd, "tree");

	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(rc == 0);
	CHECK(s.bad == 0);
	CHECK(s.next == s.want.n);
	nbak = t_count(dfd, "bak") - 1;
	if (dry) {
		CHECK(t_count(dfd, "tree") == total && nbak == 0);
	} else {
		/* Only keepme and its directories are left. */
		CHECK(t_exists(dfd, "tree/sub/keepme"));
		CHECK(t_count(dfd, "tree") == 3);
		CHECK(nbak == s.moved && s.moved > 0);
	}
	CHECK(sum.kept == 1 && sum.not_empty == 2 && sum.failed == 0);
	CHECK((long)sum.removed_total == total - 3);
	CHECK(s.reported_done == s.dones && s.dones > 0);
	CHECK(sum.removed[DE_T_SYMLINK] > 0);	/* lnk: DE_A_DELETE */
	de_ctx_free(ctx);
	ctx = NULL;

	ret = 0;
out:
	if (ret)
		fprintf(stderr, "threads=%u maxdel=%lld dry=%d: %s (next %zu of %zu)\n",
			threads, maxdel, dry, s.why, s.next, s.want.n);
	de_ctx_free(ctx);
	t_names_free(&s.want);
	t_names_free(&all);
	if (s.bak >= 0)
		close(s.bak);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "bak");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL;

	CHECK(one(dfd, 1, -1, 0) == 0);
	CHECK(one(dfd, 2, -1, 0) == 0);
	CHECK(one(dfd, 2, 1000000, 0) == 0);
	CHECK(one(dfd, 2, -1, 1) == 0);
	ret = T_PASS;
out:
	return ret;
}

/* paths: every report names its entry by the right path in every mode.
 * The emitter builds each path from the one before (node.c de__node_path), so
 * this pins the cases that reuse a prefix: down into a child, back up to
 * a parent after its children were freed, across to a sibling branch of
 * another depth, names of different lengths at each level, a long chain
 * beside a fan, and a second de_remove() on the same context (the last
 * path of the first run must not leak into the second).  Modes:
 * unordered (1 and 2 threads), DE_F_ORDERED, dry run, and enter_dir,
 * whose relpath must name the directory entered.  The reported paths
 * must equal, as a set, the tree's paths (each once). */
#include "tutil.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_rep(const void *a, const void *b)
{
	return strcmp(((const struct t_rep *)a)->path,
		      ((const struct t_rep *)b)->path);
}

/* A chain of depth levels below dfd/name whose names grow and shrink
 * ("c", "cc", ... every 7 levels), each level with two files; level
 * fan of it gets width subdirectories of 3 files each. */
static int chain(int dfd, const char *name, int depth, int fan, int width)
{
	char sub[16];
	int fd = t_dir(dfd, name), fd2, i, rc = 0;

	if (fd < 0)
		return -1;
	rc = t_file(fd, "f") || t_file(fd, "file-with-a-longer-name");
	if (!rc && depth == fan) {
		for (i = 0; i < width && !rc; i++) {
			snprintf(sub, sizeof(sub), "w%d", i);
			fd2 = t_dir(fd, sub);
			if (fd2 < 0) {
				rc = -1;
				break;
			}
			rc = t_file(fd2, "x") || t_file(fd2, "yy") ||
				t_file(fd2, "zzz");
			close(fd2);
		}
	}
	if (!rc && depth > 0) {
		memset(sub, 0, sizeof(sub));
		memset(sub, 'c', (size_t)(depth % 7) + 1);
		rc = chain(fd, sub, depth - 1, fan, width);
	}
	close(fd);
	return rc;
}

static int make_tree(int dfd)
{
	int fd = t_dir(dfd, "tree"), rc;

	if (fd < 0)
		return -1;
	rc = chain(fd, "a", 60, 30, 20) || t_mixed(fd, "m", 3, 3) ||
		chain(fd, "bbbbbbbbbbbbbbbbbbbb", 25, 3, 5) ||
		t_file(fd, "top");
	close(fd);
	return rc;
}

struct enter_log {
	struct t_reps *rs;
	int bad;
	int depth;
};

/* enter_dir: relpath must name an existing directory. */
static int on_enter(void *arg, const char *relpath, struct de_dirent *ents,
		    size_t n)
{
	struct enter_log *el = arg;
	struct stat st;

	(void)ents;
	(void)n;
	if (fstatat(AT_FDCWD, relpath, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "enter_dir: %s is no directory\n", relpath);
		el->bad = 1;
	}
	el->depth++;
	return 0;
}

static void on_leave(void *arg, const char *relpath)
{
	struct enter_log *el = arg;

	(void)relpath;
	el->depth--;
}

static void on_report(void *arg, const struct de_report *r)
{
	struct enter_log *el = arg;

	t_collect(el->rs, r);
}

/* Remove tree (twice on one context: tree, then tree2) and compare the
 * reported paths with ref / ref2.  Returns 0 if all match. */
static int run(int dfd, unsigned threads, unsigned flags, int hooks,
	       struct t_names *ref, struct t_names *ref2)
{
	struct de_config cfg = { .threads = threads, .flags = flags,
				 .max_delete = -1 };
	struct t_reps rs = { 0 };
	struct enter_log el = { &rs, 0, 0 };
	struct de_hooks h;
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct t_names *want;
	de_ctx *ctx = NULL;
	int ret = -1, pass, rc;
	size_t i;

	memset(&h, 0, sizeof(h));
	h.arg = &el;
	h.report = on_report;
	if (hooks) {
		h.enter_dir = on_enter;
		h.leave_dir = on_leave;
	}
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	for (pass = 0; pass < 2; pass++) {
		want = pass ? ref2 : ref;
		t.name = pass ? "tree2" : "tree";
		rc = de_remove(ctx, dfd, &t, 1, &h, NULL, NULL);
		CHECK(rc == 0);
		CHECK(!el.bad && el.depth == 0);
		if (rs.n != want->n) {
			fprintf(stderr, "threads %u flags %#x hooks %d: %zu "
				"reports, want %zu\n", threads, flags, hooks,
				rs.n, want->n);
			goto out;
		}
		qsort(rs.v, rs.n, sizeof(*rs.v), cmp_rep);
		for (i = 0; i < rs.n; i++) {
			if (strcmp(rs.v[i].path, want->v[i])) {
				fprintf(stderr, "threads %u flags %#x hooks "
					"%d: got %s want %s\n", threads, flags,
					hooks, rs.v[i].path, want->v[i]);
				goto out;
			}
		}
		t_reps_free(&rs);
	}
	ret = 0;
out:
	t_reps_free(&rs);
	if (ctx)
		de_ctx_free(ctx);
	return ret;
}

int test(int dfd)
{
	static const struct {
		unsigned threads, flags;
		int hooks;
	} modes[] = {
		{ 1, 0, 0 }, { 2, 0, 0 }, { 2, DE_F_P2_GATE, 0 },
		{ 2, DE_F_ORDERED, 0 }, { 2, DE_F_DRY_RUN, 0 },
		{ 2, 0, 1 },
	};
	struct t_names ref = { 0 }, ref2 = { 0 };
	int ret = T_FAIL;
	size_t m;

	/* enter_dir checks relpath against the cwd. */
	CHECK(fchdir(dfd) == 0);
	CHECK(make_tree(dfd) == 0);
	t_canon(dfd, "tree", "tree", &ref);
	qsort(ref.v, ref.n, sizeof(*ref.v), cmp_str);
	/* The second tree: a shallow one, so the first run's last path
	 * (deep) would show through if it were reused. */
	CHECK(t_mixed(dfd, "tree2", 2, 2) == 0);
	t_canon(dfd, "tree2", "tree2", &ref2);
	qsort(ref2.v, ref2.n, sizeof(*ref2.v), cmp_str);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "tree2");

	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		CHECK(make_tree(dfd) == 0);
		CHECK(t_mixed(dfd, "tree2", 2, 2) == 0);
		CHECK(run(dfd, modes[m].threads, modes[m].flags,
			  modes[m].hooks, &ref, &ref2) == 0);
		/* A dry run leaves the trees. */
		t_cleanup_sub(dfd, "tree");
		t_cleanup_sub(dfd, "tree2");
	}
	ret = T_PASS;
out:
	t_names_free(&ref);
	t_names_free(&ref2);
	return ret;
}

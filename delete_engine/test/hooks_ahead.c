/*
 * hooks_ahead: with DE_F_HOOKS_AHEAD, a run with the enter_dir, leave_dir
 * and dispose hooks (rsync's --backup) takes the global schedule as the
 * batch walk, and the caller sees what it sees directory by directory,
 * but for the order of the dispose calls.
 *
 * The tree: 24 directories whose 480 files were made in a shuffled
 * order, some with a subdirectory (nesting), one with a file the enter
 * hook keeps, one with a directory it keeps (its contents stay, never
 * disposed of), files the dispose hook keeps (a failed backup), files it
 * leaves to the engine, and the rest it renames into a backup directory
 * outside the tree.  Against the per-directory walk of the same tree:
 *   - the enter_dir/leave_dir calls are the same sequence (depth first,
 *     canonical, properly nested, each directory once), the reports the
 *     same sequence (a failed backup's with the hook's errno), and the
 *     tree and the backup end the same;
 *   - the dispose calls go in ascending inode order, one run for one
 *     window, ascending runs for windows of 100 entries (each ascending,
 *     several of them), where without the flag they go in canonical
 *     order (many descents);
 *   - DE_SCHED_AUTO with fast reads hands the tree over to the serial
 *     walk after the probe: the same calls, none twice;
 *   - with max_delete, the first N entries in canonical order go, no
 *     more, and the run says -EDQUOT.
 */
#include "tutil.h"

#define NDIRS	24
#define NFILES	20

struct calls {
	struct t_nest nest;	/* first: t_nest_* take it */
	struct t_names seq;	/* "E path", "L path" */
	uint64_t *ino;		/* dispose calls' inodes, in call order */
	size_t nino, capino;
	int bkfd;
	int twice;		/* a directory entered twice */
};

static int enter(void *arg, const char *rel, struct de_dirent *e, size_t n)
{
	struct calls *c = arg;
	char line[4200];
	size_t i, k;

	snprintf(line, sizeof(line), "E %s", rel);
	for (k = 0; k < c->seq.n; k++)
		if (!strcmp(c->seq.v[k], line))
			c->twice = 1;
	t_names_add(&c->seq, line);
	for (i = 0; i < n; i++)
		if (!strcmp(e[i].name, "keepme") || !strcmp(e[i].name, "keepdir"))
			e[i].action = DE_A_KEEP;
	return t_nest_enter(arg, rel, e, n);
}

static void leave(void *arg, const char *rel)
{
	struct calls *c = arg;
	char line[4200];

	snprintf(line, sizeof(line), "L %s", rel);
	t_names_add(&c->seq, line);
	t_nest_leave(arg, rel);
}

/* Rename into the backup directory under a name unique in the tree (the
 * relpath with '/' made '_'), as rsync's --backup-dir moves it. */
static enum de_action dispose(void *arg, int dirfd, const char *name,
			      const char *rel, enum de_type type)
{
	struct calls *c = arg;
	char flat[4200];
	struct stat st;
	size_t i;

	(void)type;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    c->nino < c->capino)
		c->ino[c->nino++] = st.st_ino;
	if (!strncmp(name, "fail", 4)) {
		errno = EROFS;	/* a failed backup: its report says why */
		return DE_A_KEEP;
	}
	if (!strncmp(name, "del", 3))
		return DE_A_DELETE;
	snprintf(flat, sizeof(flat), "%s", rel);
	for (i = 0; flat[i]; i++)
		if (flat[i] == '/')
			flat[i] = '_';
	return renameat(dirfd, name, c->bkfd, flat) == 0 ? DE_A_DONE
							  : DE_A_KEEP;
}

/* The tree at dfd/t: the same names and shuffled creation order each
 * time (seed). */
static int make_tree(int dfd)
{
	int order[NDIRS * NFILES], k, fd;
	char p[128];

	if (mkdirat(dfd, "t", 0755) < 0)
		return -1;
	for (k = 0; k < NDIRS; k++) {
		snprintf(p, sizeof(p), "t/d%02d", k);
		if (mkdirat(dfd, p, 0755) < 0)
			return -1;
		if (k % 5 == 2) {
			snprintf(p, sizeof(p), "t/d%02d/sub", k);
			if (mkdirat(dfd, p, 0755) < 0)
				return -1;
		}
	}
	t_shuffle(order, NDIRS * NFILES, 7);
	for (k = 0; k < NDIRS * NFILES; k++) {
		int d = order[k] / NFILES, f = order[k] % NFILES;
		const char *pre = f == 3 ? "fail" : f == 4 ? "del" : "f";

		if (d % 5 == 2 && f >= NFILES - 4)
			snprintf(p, sizeof(p), "t/d%02d/sub/%s%d", d, pre, f);
		else
			snprintf(p, sizeof(p), "t/d%02d/%s%d", d, pre, f);
		if (t_file(dfd, p) < 0)
			return -1;
	}
	if (t_paths(dfd, "t/d07/keepme", "t/d09/keepdir/x", "t/d09/keepdir/y/z",
		    (char *)NULL) < 0)
		return -1;
	fd = openat(dfd, "t", O_RDONLY | O_DIRECTORY);
	return fd;
}

struct outcome {
	struct calls c;
	int rc;
	long left, backed;
	size_t descents;	/* dispose calls below the one before */
};

static void outcome_free(struct outcome *o)
{
	t_reps_free(&o->c.nest.rs);
	t_names_free(&o->c.seq);
	free(o->c.ino);
}

/* One run over a fresh tree. */
static int run(int dfd, enum de_schedule sched, unsigned oflags, size_t win,
	       long long maxdel, struct outcome *o)
{
	struct de_config cfg = { .threads = 2, .schedule = sched,
				  .max_delete = -1 };
	struct de_hooks h = { 0 };
	struct de_opts op = { .flags = DE_F_ORDERED | oflags,
			      .max_delete = maxdel };
	struct de_target tg[NDIRS];
	char names[NDIRS][8];
	de_ctx *ctx = NULL;
	int tfd, k;
	size_t i;

	memset(o, 0, sizeof(*o));
	t_cleanup_sub(dfd, "t");
	t_cleanup_sub(dfd, "bk");
	if (mkdirat(dfd, "bk", 0755) < 0)
		return -1;
	tfd = make_tree(dfd);
	o->c.bkfd = openat(dfd, "bk", O_RDONLY | O_DIRECTORY);
	o->c.capino = NDIRS * NFILES;
	o->c.ino = calloc(o->c.capino, sizeof(*o->c.ino));
	if (tfd < 0 || o->c.bkfd < 0 || !o->c.ino ||
	    de_ctx_new(&ctx, &cfg) < 0)
		return -1;
	if (win)
		de_test_global_window(ctx, win, 0);
	for (k = 0; k < NDIRS; k++) {
		snprintf(names[k], sizeof(names[k]), "d%02d", k);
		tg[k].name = names[k];
		tg[k].type = DE_T_DIR;
		tg[k].ino = 0;
	}
	h.report = t_nest_report;
	h.enter_dir = enter;
	h.leave_dir = leave;
	h.dispose = dispose;
	h.arg = &o->c;
	o->rc = de_remove(ctx, tfd, tg, NDIRS, &h, &op, NULL);
	de_ctx_free(ctx);
	close(tfd);
	close(o->c.bkfd);
	for (i = 1; i < o->c.nino; i++)
		o->descents += o->c.ino[i] < o->c.ino[i - 1];
	o->left = t_count(dfd, "t");
	o->backed = t_count(dfd, "bk");
	return 0;
}

static int same_calls(const struct outcome *a, const struct outcome *b)
{
	size_t i;

	if (a->c.seq.n != b->c.seq.n || a->c.nest.rs.n != b->c.nest.rs.n)
		return 0;
	for (i = 0; i < a->c.seq.n; i++)
		if (strcmp(a->c.seq.v[i], b->c.seq.v[i])) {
			fprintf(stderr, "call %zu: %s, was %s\n", i,
				b->c.seq.v[i], a->c.seq.v[i]);
			return 0;
		}
	for (i = 0; i < a->c.nest.rs.n; i++) {
		const struct t_rep *x = &a->c.nest.rs.v[i], *y = &b->c.nest.rs.v[i];

		if (strcmp(x->path, y->path) || x->result != y->result ||
		    x->err != y->err) {
			fprintf(stderr, "report %zu: %s %d, was %s %d\n", i,
				y->path, y->result, x->path, x->result);
			return 0;
		}
	}
	return 1;
}

/* Each fail* is reported kept with the hook's errno, keepme without. */
static int keeps_said(const struct outcome *o)
{
	size_t i, n = 0;

	for (i = 0; i < o->c.nest.rs.n; i++) {
		const struct t_rep *r = &o->c.nest.rs.v[i];
		const char *b = strrchr(r->path, '/');

		b = b ? b + 1 : r->path;
		if (!strncmp(b, "fail", 4))
			n += r->result == DE_R_KEPT && r->err == EROFS;
		if (!strcmp(b, "keepme") && (r->result != DE_R_KEPT || r->err))
			return 0;
	}
	return n == NDIRS;
}

/* Entries reported removed (or disposed of). */
static size_t gone(const struct outcome *o)
{
	size_t i, n = 0;

	for (i = 0; i < o->c.nest.rs.n; i++)
		n += o->c.nest.rs.v[i].result == DE_R_REMOVED ||
		     o->c.nest.rs.v[i].result == DE_R_DONE;
	return n;
}

int test(int dfd)
{
	struct outcome dirs, glob, small, plain, autofast, lim;
	/* 24 fail* stay; 24 del* are unlinked; the rest and bk itself are
	 * in bk. */
	const long kept_files = NDIRS, backed = NDIRS * (NFILES - 2) + 1;
	int ok = T_FAIL;
	size_t i;

	memset(&dirs, 0, sizeof(dirs));
	memset(&glob, 0, sizeof(glob));
	memset(&small, 0, sizeof(small));
	memset(&plain, 0, sizeof(plain));
	memset(&autofast, 0, sizeof(autofast));
	memset(&lim, 0, sizeof(lim));

	CHECK(run(dfd, DE_SCHED_DIRS, DE_F_HOOKS_AHEAD, 0, -1, &dirs) == 0);
	/* The hooks kept what they said, and nothing else is left: t, its
	 * 24 dirs, 24 fail*, keepme, keepdir and its 3 entries. */
	CHECK(dirs.rc == 0);
	CHECK(dirs.c.nest.depth == 0 && !dirs.c.nest.bad && !dirs.c.twice);
	CHECK(dirs.left == 1 + NDIRS + kept_files + 1 + 4);
	CHECK(dirs.backed == backed);
	CHECK(dirs.c.nino == (size_t)NDIRS * NFILES);
	CHECK(dirs.descents > 50);	/* canonical order, not inode order */

	/* Forced global, one window: the same calls and reports, the
	 * disposals in one ascending inode order. */
	CHECK(run(dfd, DE_SCHED_GLOBAL, DE_F_HOOKS_AHEAD, 0, -1, &glob) == 0);
	CHECK(glob.rc == 0 && glob.c.nest.depth == 0 && !glob.c.nest.bad);
	CHECK(!glob.c.twice && same_calls(&dirs, &glob));
	CHECK(glob.left == dirs.left && glob.backed == dirs.backed);
	CHECK(glob.c.nino == dirs.c.nino);
	CHECK(keeps_said(&dirs) && keeps_said(&glob));
	CHECK(glob.descents == 0);

	/* Windows of 100 entries: ascending runs, several, same calls. */
	CHECK(run(dfd, DE_SCHED_GLOBAL, DE_F_HOOKS_AHEAD, 100, -1, &small) == 0);
	CHECK(small.rc == 0 && !small.c.nest.bad && !small.c.twice);
	CHECK(same_calls(&dirs, &small));
	CHECK(small.left == dirs.left && small.backed == dirs.backed);
	CHECK(small.descents >= 3 && small.descents <= 12);

	/* Without the flag the hooks keep the per-directory walk, even in
	 * the global schedule. */
	CHECK(run(dfd, DE_SCHED_GLOBAL, 0, 0, -1, &plain) == 0);
	CHECK(same_calls(&dirs, &plain) && plain.descents > 50);

	/* AUTO, fast reads: the probe's window was entered by the reader;
	 * the serial walk takes over without entering anything twice. */
	CHECK(run(dfd, DE_SCHED_AUTO, DE_F_HOOKS_AHEAD, 0, -1, &autofast) == 0);
	CHECK(autofast.rc == 0 && !autofast.c.nest.bad &&
	      autofast.c.nest.depth == 0 && !autofast.c.twice);
	CHECK(same_calls(&dirs, &autofast));
	CHECK(autofast.left == dirs.left && autofast.backed == dirs.backed);

	/* A limit: exactly the first 100 in canonical order, in the batch
	 * walk as in the per-directory one. */
	CHECK(run(dfd, DE_SCHED_GLOBAL, DE_F_HOOKS_AHEAD, 100, 100, &lim) == 0);
	CHECK(lim.rc == -EDQUOT && !lim.c.nest.bad && !lim.c.twice);
	CHECK(gone(&lim) == 100);
	outcome_free(&dirs);
	CHECK(run(dfd, DE_SCHED_DIRS, DE_F_HOOKS_AHEAD, 0, 100, &dirs) == 0);
	CHECK(dirs.rc == -EDQUOT && gone(&dirs) == 100);
	CHECK(same_calls(&dirs, &lim));
	for (i = 0; i < lim.c.nest.rs.n; i++)
		CHECK(!strcmp(lim.c.nest.rs.v[i].path, dirs.c.nest.rs.v[i].path));
	ok = T_PASS;
out:
	outcome_free(&dirs);
	outcome_free(&glob);
	outcome_free(&small);
	outcome_free(&plain);
	outcome_free(&autofast);
	outcome_free(&lim);
	return ok;
}

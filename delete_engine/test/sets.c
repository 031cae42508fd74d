/*
 * sets: de_remove_sets() removes targets in several directories as
 * calls in a row would, and in the global schedule as one run.
 *
 *   - 6 directories, each with 30 files made in one shuffled order
 *     across them; the targets are 15 of each one's files, scattered,
 *     and in set 2 a subdirectory with files.  Forced global: the 90
 *     files and the subdirectory's unlinked in one ascending inode
 *     order, the reports in set order, each set's in its targets' order
 *     (the subdirectory's in canonical order), with de_report.set; the
 *     other files and the sets' directories stay, their fds still open.
 *   - DE_SCHED_AUTO before the device's reads were timed: one call per
 *     set (an ascending run per directory), the same ordered reports
 *     (unordered ones come set by set too); after 8
 *     slow reads told of the device (de_note_read(), which says -1 until
 *     then and 1 after; 0 after fast ones), one run.
 *   - max_delete across the sets: exactly the first N in report order,
 *     the rest skipped and in place, -EDQUOT, in both ways.
 *   - a dry run goes set by set and removes nothing.
 * The unlink order is read through the fault hook; file names are
 * unique across the directories so that a name tells the inode.
 */
#include "tutil.h"

#define NSETS	6
#define NFILES	30

struct rec {
	char path[64];
	unsigned set;
	int result;
};

static struct rec reps[NSETS * NFILES + 16];
static size_t nreps;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char seen[NSETS * NFILES + 16][16];
static size_t nseen;
static uint64_t inos[NSETS][NFILES];
static uint64_t sub_inos[3];

static void collect(void *arg, const struct de_report *r)
{
	(void)arg;
	if (nreps < sizeof(reps) / sizeof(reps[0])) {
		snprintf(reps[nreps].path, sizeof(reps[0].path), "%s", r->path);
		reps[nreps].set = r->set;
		reps[nreps++].result = r->result;
	}
}

static int record(void *arg, int op, const char *name)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	if (op == DE_OP_UNLINK && name[0] == 'f' && nseen < sizeof(seen) / sizeof(seen[0]))
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* The inode of file name "fS_I" (or "fsub_I"), from when it was made. */
static uint64_t ino_of(const char *name)
{
	int s, i;

	if (sscanf(name, "fsub_%d", &i) == 1)
		return sub_inos[i];
	if (sscanf(name, "f%d_%d", &s, &i) == 2)
		return inos[s][i];
	return 0;
}

static size_t runs(void)
{
	uint64_t last = 0;
	size_t i, n = 0;

	for (i = 0; i < nseen; i++) {
		uint64_t ino = ino_of(seen[i]);

		if (i == 0 || ino < last)
			n++;
		last = ino;
	}
	return n;
}

/* s0..s5 with their files, made in one shuffled order; s2/sub with 3. */
static int make_sets(int dfd, int *fds)
{
	int order[NSETS * NFILES], i;
	char path[64];
	struct stat st;

	for (i = 0; i < NSETS; i++) {
		snprintf(path, sizeof(path), "s%d", i);
		if ((fds[i] = t_dir(dfd, path)) < 0)
			return -1;
	}
	t_shuffle(order, NSETS * NFILES, 11);
	for (i = 0; i < NSETS * NFILES; i++) {
		int s = order[i] / NFILES, f = order[i] % NFILES;

		snprintf(path, sizeof(path), "f%d_%02d", s, f);
		if (t_file(fds[s], path) || fstatat(fds[s], path, &st, AT_SYMLINK_NOFOLLOW))
			return -1;
		inos[s][f] = st.st_ino;
	}
	if (mkdirat(fds[2], "sub", 0755))
		return -1;
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "sub/fsub_%d", i);
		if (t_file(fds[2], path) || fstatat(fds[2], path, &st, AT_SYMLINK_NOFOLLOW))
			return -1;
		sub_inos[i] = st.st_ino;
	}
	return 0;
}

static char names[NSETS][NFILES / 2 + 1][16];
static struct de_target targets[NSETS][NFILES / 2 + 1];

/* The sets: every odd file of each (in descending order, as rsync hands
 * them), and s2's sub first. */
static void fill_sets(struct de_set *sets, const int *fds)
{
	int s, i, k;

	for (s = 0; s < NSETS; s++) {
		k = 0;
		if (s == 2) {
			snprintf(names[s][k], sizeof(names[0][0]), "sub");
			targets[s][k] = (struct de_target){ names[s][k], DE_T_DIR, 0 };
			k++;
		}
		for (i = NFILES - 1; i >= 0; i--) {
			if (!(i & 1))
				continue;
			snprintf(names[s][k], sizeof(names[0][0]), "f%d_%02d", s, i);
			targets[s][k] = (struct de_target){ names[s][k], DE_T_FILE, inos[s][i] };
			k++;
		}
		sets[s].dirfd = fds[s];
		sets[s].targets = targets[s];
		sets[s].n = (size_t)k;
	}
}

/* The reports one call per set would give, in order. */
static size_t want(struct rec *w)
{
	static const char *sub[] = { "sub/fsub_2", "sub/fsub_1", "sub/fsub_0", "sub" };
	size_t n = 0, i;
	int s, f;

	for (s = 0; s < NSETS; s++) {
		if (s == 2)
			for (i = 0; i < 4; i++) {
				snprintf(w[n].path, sizeof(w[0].path), "%s", sub[i]);
				w[n++].set = 2;
			}
		for (f = NFILES - 1; f >= 0; f--) {
			if (!(f & 1))
				continue;
			snprintf(w[n].path, sizeof(w[0].path), "f%d_%02d", s, f);
			w[n++].set = (unsigned)s;
		}
	}
	return n;
}

/* Remove the sets with ctx (fresh dirs each time); check the reports
 * against one call per set, the first maxdel removed (all when < 0),
 * and what is left.  Returns de_remove_sets' value, or 1. */
static int one(int dfd, de_ctx *ctx, unsigned flags, long long maxdel)
{
	struct rec w[sizeof(reps) / sizeof(reps[0])];
	struct de_set sets[NSETS];
	struct de_opts o = { .flags = flags, .max_delete = maxdel };
	struct de_summary sum;
	int fds[NSETS], ret = 1, rc, s, f;
	size_t n = want(w), i, nrm;

	for (s = 0; s < NSETS; s++)
		fds[s] = -1;
	CHECK(make_sets(dfd, fds) == 0);
	fill_sets(sets, fds);
	nreps = nseen = 0;
	rc = de_remove_sets(ctx, sets, NSETS, &(struct de_hooks){ .report = collect },
			    &o, &sum);
	nrm = maxdel < 0 || (size_t)maxdel > n ? n : (size_t)maxdel;
	if (flags & DE_F_DRY_RUN)
		nrm = 0;
	CHECK(nreps == n);
	for (i = 0; i < n; i++) {
		if (strcmp(reps[i].path, w[i].path) || reps[i].set != w[i].set) {
			fprintf(stderr, "at %zu: got %u:%s want %u:%s\n", i,
				reps[i].set, reps[i].path, w[i].set, w[i].path);
			goto out;
		}
		CHECK(reps[i].result == ((flags & DE_F_DRY_RUN) || i < nrm ?
					 DE_R_REMOVED : DE_R_SKIPPED));
		CHECK(t_exists(fds[w[i].set], w[i].path) == (i >= nrm));
	}
	CHECK(sum.removed_total == ((flags & DE_F_DRY_RUN) ? n : nrm));
	for (s = 0; s < NSETS; s++) {
		CHECK(fcntl(fds[s], F_GETFD) >= 0);
		for (f = 0; f < NFILES; f += 2) {
			char name[16];

			snprintf(name, sizeof(name), "f%d_%02d", s, f);
			CHECK(t_exists(fds[s], name));
		}
	}
	ret = rc;
out:
	for (s = 0; s < NSETS; s++) {
		char path[16];

		if (fds[s] >= 0)
			close(fds[s]);
		snprintf(path, sizeof(path), "s%d", s);
		t_cleanup_sub(dfd, path);
	}
	return ret;
}

static de_ctx *new_ctx(unsigned sched)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1, .schedule = sched };
	de_ctx *ctx = NULL;

	if (de_test_ctx_new(&ctx, &cfg, record, NULL))
		return NULL;
	return ctx;
}

int test(int dfd)
{
	de_ctx *ctx = NULL;
	int ret = T_FAIL, i;

	/* Forced global: one run, one ascending order. */
	CHECK((ctx = new_ctx(DE_SCHED_GLOBAL)));
	CHECK(one(dfd, ctx, 0, -1) == 0);
	CHECK(nseen == NSETS * NFILES / 2 + 3 && runs() == 1);
	CHECK(one(dfd, ctx, DE_F_ORDERED, -1) == 0 && runs() == 1);
	CHECK(one(dfd, ctx, 0, 40) == -EDQUOT);
	CHECK(one(dfd, ctx, 0, 0) == -EDQUOT && nseen == 0);
	CHECK(one(dfd, ctx, DE_F_DRY_RUN, -1) == 0 && nseen == 0);
	de_ctx_free(ctx);

	/* AUTO: in turn until the device is known slow, then one run. */
	CHECK((ctx = new_ctx(DE_SCHED_AUTO)));
	CHECK(one(dfd, ctx, DE_F_ORDERED, -1) == 0);
	CHECK(nseen == NSETS * NFILES / 2 + 3 && runs() >= NSETS);
	CHECK(one(dfd, ctx, 0, 50) == -EDQUOT);
	for (i = 0; i < 7; i++)
		CHECK(de_note_read(ctx, dfd, 3000000, 10) == -1);
	CHECK(de_note_read(ctx, dfd, 3000000, 5000) == -1);	/* too long to tell */
	CHECK(de_note_read(ctx, dfd, 3000000, 10) == 1);
	CHECK(de_note_read(ctx, dfd, 100, 10) == 1);		/* decided */
	CHECK(one(dfd, ctx, 0, -1) == 0);
	CHECK(nseen == NSETS * NFILES / 2 + 3 && runs() == 1);
	CHECK(one(dfd, ctx, 0, 50) == -EDQUOT);
	de_ctx_free(ctx);
	/* Fast reads: 0, and the sets go in turn. */
	CHECK((ctx = new_ctx(DE_SCHED_AUTO)));
	for (i = 0; i < 7; i++)
		CHECK(de_note_read(ctx, dfd, 100000, 10) == -1);
	CHECK(de_note_read(ctx, dfd, 100000, 10) == 0);
	CHECK(one(dfd, ctx, DE_F_ORDERED, -1) == 0 && runs() >= NSETS);
	ret = T_PASS;
out:
	de_ctx_free(ctx);
	return ret;
}

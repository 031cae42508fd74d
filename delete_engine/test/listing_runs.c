/*
 * listing_runs: a huge directory is unlinked in runs of its listing, each
 * in inode order (order.c de__inode_order, global.c window_order).
 *
 * One directory of 3,000 files with names of 20 bytes (28 bytes of an
 * ext4 directory block each), made in a shuffled order so that inode
 * order is not listing order, and a hard link to one of them.  Its
 * listing order is read with readdir, as the engine reads it.  With a
 * bound of B directory blocks (de_test_global_window), the unlinks must
 * be exactly: the listing cut where its entries' bytes reach B * 4096,
 * each run in ascending inode order (the two names of the hard link in
 * either order), the runs in listing order.  Checked for:
 *   - the per-directory schedule (DE_SCHED_DIRS), one worker, bounds of
 *     2 and 5 blocks (11 and 5 runs);
 *   - the global schedule (DE_SCHED_GLOBAL);
 *   - DE_SCHED_AUTO, whose probe hands the fast tree to the pool;
 *   - the files given as targets in name order, as rsync gives them:
 *     the engine reads the directory's order again and cuts that, and
 *     de_order_targets() puts them in that order, in runs of half the
 *     bound where the run would fill its holes; so does the global
 *     schedule filling, the subdirectory given beside them or not (its
 *     window then holds both);
 *   - with no bound and no known journal: one ascending order;
 *   - de_explain() names the bound;
 *   - everything is removed, the hard link's inode by both names.
 * The unlink order is read through the fault hook.
 */
#include "tutil.h"

#include <dirent.h>

#define NFILES	3000

struct lent {
	char name[32];
	uint64_t ino;
	int file;
};
static struct lent listing[NFILES + 8];
static size_t nlisting;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char seen[NFILES + 8][32];
static size_t nseen;

static int record(void *arg, int op, const char *name)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	if (op == DE_OP_UNLINK && nseen < NFILES + 8)
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
	pthread_mutex_unlock(&mu);
	return 0;
}

static uint64_t ino_of(const char *name)
{
	size_t i;

	for (i = 0; i < nlisting; i++)
		if (strcmp(listing[i].name, name) == 0)
			return listing[i].ino;
	return 0;
}

/* big/ with its files made in a shuffled order, a hard link, and a
 * subdirectory; its listing as readdir gives it. */
static int make_big(int dfd)
{
	int order[NFILES], i, fd;
	char path[64];
	DIR *d;
	struct dirent *e;

	if (mkdirat(dfd, "big", 0755) || mkdirat(dfd, "big/sub", 0755))
		return -1;
	t_shuffle(order, NFILES, 11);
	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "big/f%04d_listing_runs", order[i]);
		if (t_file(dfd, path))
			return -1;
	}
	if (linkat(dfd, "big/f0007_listing_runs", dfd,
		   "big/hardlink_listing_run", 0))
		return -1;
	fd = openat(dfd, "big", O_RDONLY | O_DIRECTORY);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d)
		return -1;
	nlisting = 0;
	while ((e = readdir(d)) && nlisting < NFILES + 8) {
		struct lent *l = &listing[nlisting];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (strlen(e->d_name) >= sizeof(l->name))
			break;
		memcpy(l->name, e->d_name, strlen(e->d_name) + 1);
		l->ino = e->d_ino;
		l->file = e->d_type != DT_DIR;
		nlisting++;
	}
	closedir(d);
	return nlisting == NFILES + 2 ? 0 : -1;
}

static int by_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct lent *)a)->ino;
	uint64_t y = ((const struct lent *)b)->ino;

	return x < y ? -1 : x > y;
}

/*
 * Whether what was unlinked is the listing cut into runs of at most
 * blocks directory blocks (none: 0), counted from first bytes, each run
 * in inode order; *nruns set to the runs expected.
 */
static int in_runs(size_t blocks, size_t first, size_t *nruns)
{
	struct lent want[NFILES + 8];
	size_t i, n = 0, from = 0, bytes = first, run = blocks * 4096;

	*nruns = 0;
	for (i = 0; i < nlisting; i++) {
		if (listing[i].file && run && bytes >= run) {
			qsort(want + from, n - from, sizeof(*want), by_ino);
			*nruns += n > from;
			from = n;
			bytes = 0;
		}
		if (!listing[i].file)
			continue;
		bytes += (8u + strlen(listing[i].name) + 3u) & ~(size_t)3;
		want[n++] = listing[i];
	}
	qsort(want + from, n - from, sizeof(*want), by_ino);
	*nruns += n > from;
	if (nseen != n) {
		fprintf(stderr, "unlinked %zu, want %zu\n", nseen, n);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (ino_of(seen[i]) != want[i].ino) {
			fprintf(stderr, "at %zu: %s, want %s\n", i, seen[i],
				want[i].name);
			return 0;
		}
	return 1;
}

/* Remove big with schedule sched and a bound of blocks; 0 when it went
 * whole.  The plan's line goes to plan. */
static int remove_big(int dfd, unsigned sched, size_t blocks, char *plan,
		      size_t len)
{
	struct de_config cfg = { .threads = 1, .max_delete = -1,
				 .schedule = sched,
				 .flags = DE_F_INODE_SORT | DE_F_NO_SPLIT };
	struct de_target t = { .name = "big" };
	struct de_summary sum;
	de_ctx *ctx;
	int rc;

	nseen = 0;
	if (de_test_ctx_new(&ctx, &cfg, record, NULL))
		return -ENOMEM;
	de_test_global_window(ctx, 0, blocks);
	rc = de_remove(ctx, dfd, &t, 1, NULL, NULL, &sum);
	if (rc)
		fprintf(stderr, "de_remove: %d\n", rc);
	if (de_explain(ctx, plan, len) < 0)
		plan[0] = '\0';
	de_ctx_free(ctx);
	if (rc == 0 && (sum.removed_total != NFILES + 3 || sum.failed)) {
		fprintf(stderr, "removed %llu, failed %llu\n",
			(unsigned long long)sum.removed_total,
			(unsigned long long)sum.failed);
		rc = -EIO;
	}
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct de_target *)a)->name,
		      ((const struct de_target *)b)->name);
}

/* big's files as targets, in name order (as rsync gives them); *n set. */
static struct de_target *given_targets(size_t *n)
{
	static struct de_target t[NFILES + 8];
	size_t i;

	*n = 0;
	for (i = 0; i < nlisting; i++)
		if (listing[i].file)
			t[(*n)++] = (struct de_target){ .name = listing[i].name,
							.type = DE_T_FILE,
							.ino = listing[i].ino };
	qsort(t, *n, sizeof(*t), by_name);
	return t;
}

/*
 * The files of big given as targets, in name order (as rsync gives
 * them), with a bound of blocks, under sched, filling as fill says: the
 * engine reads big's order again and cuts that (the global schedule
 * takes them as de_order_targets() puts them, as rsync does).  With
 * sub, big/sub is given too, and the window reads it.  0 when they
 * went, and sub stayed unless given.
 */
static int remove_given(int dfd, size_t blocks, unsigned sched, int fill,
			int sub)
{
	struct de_config cfg = { .threads = 1, .max_delete = -1,
				 .schedule = sched,
				 .flags = DE_F_INODE_SORT | DE_F_NO_SPLIT };
	struct de_summary sum;
	size_t n;
	struct de_target *t = given_targets(&n);
	de_ctx *ctx;
	int rc, bfd = openat(dfd, "big", O_RDONLY | O_DIRECTORY);

	if (bfd < 0)
		return -errno;
	if (sub)
		t[n++] = (struct de_target){ .name = "sub", .type = DE_T_DIR };
	nseen = 0;
	rc = de_test_ctx_new(&ctx, &cfg, record, NULL);
	if (rc == 0) {
		de_test_global_window(ctx, 0, blocks);
		de_test_global_fill(ctx, fill);
		/* The global schedule takes a listing in the order given:
		 * rsync's, de_order_targets()'. */
		if (sched == DE_SCHED_GLOBAL)
			rc = de_order_targets(ctx, bfd, t, n);
		if (rc == 0)
			rc = de_remove(ctx, bfd, t, n, NULL, NULL, &sum);
		de_ctx_free(ctx);
	}
	close(bfd);
	if (rc == 0 && (sum.removed_total != n || sum.failed ||
			t_exists(dfd, "big/sub") == sub))
		rc = -EIO;
	return rc;
}

/* de_order_targets() on big's files in name order, with a bound of
 * blocks, filling as fill says: into seen[], as if unlinked in that
 * order. */
static int order_given(int dfd, size_t blocks, int fill)
{
	struct de_config cfg = { .flags = DE_F_INODE_SORT };
	size_t n;
	struct de_target *t = given_targets(&n);
	de_ctx *ctx;
	int rc, bfd = openat(dfd, "big", O_RDONLY | O_DIRECTORY);

	if (bfd < 0)
		return -errno;
	rc = de_ctx_new(&ctx, &cfg);
	if (rc == 0) {
		de_test_global_window(ctx, 0, blocks);
		de_test_global_fill(ctx, fill);
		rc = de_order_targets(ctx, bfd, t, n);
		de_ctx_free(ctx);
	}
	close(bfd);
	for (nseen = 0; nseen < n; nseen++)
		snprintf(seen[nseen], sizeof(seen[0]), "%s", t[nseen].name);
	return rc;
}

int test(int dfd)
{
	static const struct {
		unsigned sched;
		size_t blocks, first, runs;
	} c[] = {
		{ DE_SCHED_DIRS, 2, 0, 11 },
		{ DE_SCHED_DIRS, 5, 0, 5 },
		{ DE_SCHED_GLOBAL, 2, 0, 11 },
		{ DE_SCHED_GLOBAL, 5, 0, 5 },
		{ DE_SCHED_AUTO, 2, 0, 11 },
	};
	char plan[512];
	size_t k, nruns;

	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		CHECK(make_big(dfd) == 0);
		CHECK(remove_big(dfd, c[k].sched, c[k].blocks, plan,
				 sizeof(plan)) == 0);
		CHECK(!t_exists(dfd, "big"));
		if (!in_runs(c[k].blocks, c[k].first, &nruns)) {
			fprintf(stderr, "case %zu (schedule %u, %zu blocks)\n",
				k, c[k].sched, c[k].blocks);
			goto out;
		}
		if (nruns != c[k].runs)
			fprintf(stderr, "case %zu: %zu runs\n", k, nruns);
		CHECK(nruns == c[k].runs);
		CHECK(strstr(plan, "in runs of ") != NULL);
	}
	/* Given in name order, the files still go in the directory's, and
	 * de_order_targets() puts them in the order the engine takes. */
	CHECK(make_big(dfd) == 0);
	CHECK(order_given(dfd, 2, -1) == 0);
	CHECK(in_runs(2, 0, &nruns));
	CHECK(nruns == 11);
	/* Where the run would fill, in runs of half the bound. */
	CHECK(order_given(dfd, 2, 1) == 0);
	CHECK(in_runs(1, 0, &nruns));
	CHECK(remove_given(dfd, 2, DE_SCHED_DIRS, -1, 0) == 0);
	CHECK(in_runs(2, 0, &nruns));
	CHECK(nruns == 11);
	t_cleanup_sub(dfd, "big");
	/* Filling, under the global schedule, runs of half the bound: the
	 * listing alone, and with a subdirectory given beside it, which
	 * ends in the same window (at the end of the tree). */
	CHECK(make_big(dfd) == 0);
	CHECK(remove_given(dfd, 2, DE_SCHED_GLOBAL, 1, 0) == 0);
	CHECK(in_runs(1, 0, &nruns));
	t_cleanup_sub(dfd, "big");
	CHECK(make_big(dfd) == 0);
	CHECK(remove_given(dfd, 2, DE_SCHED_GLOBAL, 1, 1) == 0);
	CHECK(in_runs(1, 0, &nruns));
	t_cleanup_sub(dfd, "big");
	/* No bound (tmpfs, or a file system with no journal known): one
	 * ascending order.  On ext4 the journal gives one; skip there. */
	CHECK(make_big(dfd) == 0);
	CHECK(remove_big(dfd, DE_SCHED_DIRS, 0, plan, sizeof(plan)) == 0);
	if (!strstr(plan, "in runs of ")) {
		CHECK(in_runs(0, 0, &nruns));
		CHECK(nruns == 1);
	}
	return 0;
out:
	return 1;
}

/*
 * global_order: DE_SCHED_GLOBAL unlinks the files of a window of the tree
 * in one ascending inode order across its directories, window after
 * window, and keeps every guarantee of the per-directory schedule.
 *
 *   - 24 directories whose 480 files (and a hard link) were made in a
 *     shuffled order, so that each directory's inodes interleave with the
 *     others': unlinked in one ascending order (one window), then with a
 *     window of 100 entries in ascending runs, at least 4 of them, each
 *     ascending; every directory is removed after its files.
 *   - symlinks to a directory outside and a dangling one are removed as
 *     links (the outside stays); a fifo is removed.
 *   - a tmpfs mounted inside is kept (DE_R_MOUNT) with what it holds, its
 *     parents reported not empty, and with DE_F_ONE_FILE_SYSTEM as
 *     another file system's (DE_R_OTHER_FS) (root; skipped otherwise).
 *   - a chain 600 directories deep goes, with windows of 8 directories
 *     and an fd budget far below its depth.
 *   - a dry run keeps the per-directory schedule and removes nothing.
 *   - ordered runs take it as the batch walk: the reports come in
 *     canonical order (the 781 directories of t_mixed() too, in windows
 *     of 200 entries, and in plain byte order), and the files of each
 *     window still go in one ascending inode order; max_delete stops at
 *     exactly the first N in canonical order, inside a window and across
 *     windows, and 0 removes nothing; the deep chain with few fds goes in
 *     order, and stops at a limit too.  A mount point inside is kept in
 *     an ordered run as in the others.
 *   - AUTO in an ordered run: slow reads take the batch walk (one
 *     ascending run), fast ones hand the tree to the pool (many), and
 *     with a limit, to the serial walk; canonical and exact each way.
 *   - DE_SCHED_AUTO: with each directory read made 3 ms slow (the fault
 *     hook sleeps), it stays global (one ascending run); with fast reads
 *     it hands over to the pool after the probe, and the files go
 *     directory by directory (many runs), the tree and a deep chain
 *     removed all the same.
 * The unlink order is read through the fault hook (which sees every
 * unlinkat before it is made); file names are unique across the tree so
 * that a name tells the inode.
 */
#include "tutil.h"

#include <sys/resource.h>
#include <time.h>

#define NDIRS	24
#define NFILES	20

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char (*seen)[32];
static size_t nseen, capseen;
static int rmdirs_before_files;	/* an rmdir came before the last unlink of a file */
static int slow_reads;		/* sleep 3 ms before each directory read */

static int record(void *arg, int op, const char *name)
{
	(void)arg;
	if (op == DE_OP_READ && slow_reads) {
		struct timespec ts = { 0, 3000000 };

		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&mu);
	if (op == DE_OP_UNLINK && name[0] == 'f' && nseen < capseen)
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
	if (op == DE_OP_RMDIR && name[0] == 'd' && nseen < (size_t)NDIRS * NFILES)
		rmdirs_before_files = 1;
	pthread_mutex_unlock(&mu);
	return 0;
}

struct fino {
	char name[32];
	uint64_t ino;
};
static struct fino inos[NDIRS * NFILES + 8];
static size_t ninos;

static uint64_t ino_of(const char *name)
{
	size_t i;

	for (i = 0; i < ninos; i++)
		if (strcmp(inos[i].name, name) == 0)
			return inos[i].ino;
	return 0;
}

/* tree/dNN/fNN_MMM, made in a shuffled order; tree/d00/hardlink. */
static int shuffled_tree(int dfd)
{
	int order[NDIRS * NFILES], i;
	char path[64];
	struct stat st;

	if (mkdirat(dfd, "tree", 0755))
		return -1;
	for (i = 0; i < NDIRS; i++) {
		snprintf(path, sizeof(path), "tree/d%02d", i);
		if (mkdirat(dfd, path, 0755))
			return -1;
	}
	t_shuffle(order, NDIRS * NFILES, 7);
	ninos = 0;
	for (i = 0; i < NDIRS * NFILES; i++) {
		int d = order[i] / NFILES, f = order[i] % NFILES;

		snprintf(inos[ninos].name, sizeof(inos[0].name), "f%02d_%03d", d, f);
		snprintf(path, sizeof(path), "tree/d%02d/%s", d, inos[ninos].name);
		if (t_file(dfd, path) || fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW))
			return -1;
		inos[ninos++].ino = st.st_ino;
	}
	/* A hard link: its name unlinks the same inode as d05's file. */
	if (linkat(dfd, "tree/d05/f05_003", dfd, "tree/d00/flink", 0))
		return -1;
	snprintf(inos[ninos].name, sizeof(inos[0].name), "flink");
	inos[ninos++].ino = ino_of("f05_003");
	return 0;
}

/* Remove tree with the global schedule; returns de_remove's value. */
static int remove_sched(int dfd, const char *name, unsigned sched,
			size_t win_ents, size_t win_blocks, unsigned flags,
			long long maxdel, struct t_reps *rs, struct de_summary *sum)
{
	struct de_config cfg = { .threads = 2, .max_delete = maxdel,
				 .schedule = sched, .flags = flags };
	struct de_target t = { .name = name };
	struct de_hooks h = { .arg = rs, .report = rs ? t_collect : NULL };
	de_ctx *ctx;
	int rc;

	nseen = 0;
	rmdirs_before_files = 0;
	if (de_test_ctx_new(&ctx, &cfg, record, NULL))
		return -ENOMEM;
	de_test_global_window(ctx, win_ents, win_blocks);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, sum);
	de_ctx_free(ctx);
	return rc;
}

#define remove_global(dfd, name, ...) \
	remove_sched(dfd, name, DE_SCHED_GLOBAL, __VA_ARGS__)

/*
 * Remove name (DE_F_ORDERED added to flags) with schedule sched, and
 * check the reports against ref, its canonical order: exactly the first
 * maxdel removed (all when < 0), the rest skipped and still there.
 * Returns de_remove's value, or 1 when a check failed.
 */
static int ordered_run(int dfd, const char *name, unsigned sched,
		       size_t win_ents, unsigned flags, long long maxdel,
		       const struct t_names *ref)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	size_t i, want = maxdel < 0 || (size_t)maxdel > ref->n ?
			 ref->n : (size_t)maxdel;
	int rc, ret = 1;

	rc = remove_sched(dfd, name, sched, win_ents, 0, flags | DE_F_ORDERED,
			  maxdel, &rs, &sum);
	CHECK(rs.n == ref->n);
	CHECK(sum.removed_total == want);
	CHECK(sum.skipped == ref->n - want);
	for (i = 0; i < rs.n; i++) {
		if (strcmp(rs.v[i].path, ref->v[i])) {
			fprintf(stderr, "%s: at %zu: got %s want %s\n", name,
				i, rs.v[i].path, ref->v[i]);
			goto out;
		}
		CHECK(rs.v[i].result == (i < want ? DE_R_REMOVED :
					 DE_R_SKIPPED));
		CHECK(i < want || t_exists(dfd, ref->v[i]));
	}
	CHECK(want < ref->n || !t_exists(dfd, name));
	ret = rc;
out:
	t_reps_free(&rs);
	return ret;
}

/* The number of ascending runs in what was unlinked; 0 when an inode is
 * unknown. */
static size_t runs(void)
{
	uint64_t last = 0;
	size_t i, n = 0;

	for (i = 0; i < nseen; i++) {
		uint64_t ino = ino_of(seen[i]);

		if (!ino)
			return 0;
		if (i == 0 || ino < last)
			n++;
		last = ino;
	}
	return n;
}

static int deep_chain(int dfd, int depth)
{
	int fd = dup(dfd), next, i;

	for (i = 0; i < depth && fd >= 0; i++) {
		if (mkdirat(fd, i ? "d" : "chain", 0755) ||
		    (next = openat(fd, i ? "d" : "chain", O_RDONLY | O_DIRECTORY)) < 0) {
			close(fd);
			return -1;
		}
		close(fd);
		fd = next;
		if (t_file(fd, "f")) {
			close(fd);
			return -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : -1;
}

int test(int dfd)
{
	static const struct { long long max; size_t win; } limits[] = {
		{ 0, 0 }, { 1, 0 }, { 50, 0 }, { 50, 100 }, { 333, 100 },
		{ 100000, 100 },
	};
	struct de_summary sum;
	struct t_reps rs = { 0 };
	struct t_names ref = { 0 };
	struct rlimit rl, low;
	char target[4200];
	int ret = T_FAIL, m = -1, rc, lowered = 0;
	size_t n, i;

	capseen = NDIRS * NFILES + 16;
	seen = calloc(capseen, sizeof(*seen));
	CHECK(seen);

	/* One window: one ascending order over all 481 names. */
	CHECK(shuffled_tree(dfd) == 0);
	CHECK(t_paths(dfd, "outside/sentinel", NULL) == 0);
	snprintf(target, sizeof(target), "%s/outside", t_base);
	CHECK(symlinkat(target, dfd, "tree/d01/abs-link") == 0);
	CHECK(symlinkat("/nonexistent-de", dfd, "tree/d02/dangling") == 0);
	CHECK(mkfifoat(dfd, "tree/d03/pipe", 0600) == 0);
	rc = remove_global(dfd, "tree", 0, 0, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(t_exists(dfd, "outside/sentinel"));
	CHECK(nseen == NDIRS * NFILES + 1);
	CHECK(runs() == 1);
	CHECK(!rmdirs_before_files);
	CHECK(sum.removed[DE_T_FILE] == NDIRS * NFILES + 1);
	CHECK(sum.removed[DE_T_SYMLINK] == 2);
	CHECK(sum.removed[DE_T_SPECIAL] == 1);
	CHECK(sum.removed[DE_T_DIR] == NDIRS + 1);

	/* Windows of 100 entries: ascending runs, one per window. */
	CHECK(shuffled_tree(dfd) == 0);
	rc = remove_global(dfd, "tree", 100, 0, 0, -1, NULL, &sum);
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(nseen == NDIRS * NFILES + 1);
	n = runs();
	CHECK(n >= 4 && n <= NDIRS);
	/* And by directory blocks: a block each, so 3 directories a window. */
	CHECK(shuffled_tree(dfd) == 0);
	rc = remove_global(dfd, "tree", 0, 3, 0, -1, NULL, &sum);
	CHECK(rc == 0 && !t_exists(dfd, "tree"));
	n = runs();
	CHECK(n >= NDIRS / 4 && n <= NDIRS);

	/* A dry run keeps the per-directory schedule. */
	CHECK(shuffled_tree(dfd) == 0);
	rc = remove_global(dfd, "tree", 0, 0, DE_F_DRY_RUN, -1, NULL, &sum);
	CHECK(rc == 0 && nseen == 0);
	CHECK(t_count(dfd, "tree") == 1 + NDIRS + NDIRS * NFILES + 1);
	t_cleanup_sub(dfd, "tree");

	/* Ordered: canonical reports, one inode order a window. */
	CHECK(shuffled_tree(dfd) == 0);
	t_canon(dfd, "tree", "tree", &ref);
	CHECK(ordered_run(dfd, "tree", DE_SCHED_GLOBAL, 0, 0, -1, &ref) == 0);
	CHECK(nseen == NDIRS * NFILES + 1 && runs() == 1);
	CHECK(!rmdirs_before_files);
	t_names_free(&ref);
	CHECK(shuffled_tree(dfd) == 0);
	t_canon(dfd, "tree", "tree", &ref);
	CHECK(ordered_run(dfd, "tree", DE_SCHED_GLOBAL, 100, 0, -1, &ref) == 0);
	n = runs();
	CHECK(n >= 4 && n <= NDIRS);
	t_names_free(&ref);
	/* A limit: the first N, inside one window and across windows. */
	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		CHECK(shuffled_tree(dfd) == 0);
		t_canon(dfd, "tree", "tree", &ref);
		rc = ordered_run(dfd, "tree", DE_SCHED_GLOBAL, limits[i].win, 0,
				 limits[i].max, &ref);
		if (rc != (limits[i].max < (long long)ref.n ? -EDQUOT : 0)) {
			fprintf(stderr, "limit %lld, window %zu: %d\n",
				limits[i].max, limits[i].win, rc);
			goto out;
		}
		t_names_free(&ref);
		t_cleanup_sub(dfd, "tree");
	}
	/* Byte-order traps, links, 781 directories, windows of 200. */
	CHECK(t_mixed(dfd, "mixed", 4, 5) == 0);
	t_canon(dfd, "mixed", "mixed", &ref);
	CHECK(ordered_run(dfd, "mixed", DE_SCHED_GLOBAL, 200, 0, -1, &ref) == 0);
	t_names_free(&ref);
	CHECK(t_mixed(dfd, "mixed", 2, 4) == 0);
	rc = remove_sched(dfd, "mixed", DE_SCHED_GLOBAL, 50, 0,
			  DE_F_ORDERED | DE_F_PLAIN_ORDER, -1, &rs, &sum);
	CHECK(rc == 0 && !t_exists(dfd, "mixed"));
	for (i = 1; i < rs.n; i++) {
		const char *a = rs.v[i - 1].path, *b = rs.v[i].path;

		/* Siblings directly under mixed/: descending bytes. */
		if (!strncmp(a, "mixed/", 6) && !strncmp(b, "mixed/", 6) &&
		    !strchr(a + 6, '/') && !strchr(b + 6, '/'))
			CHECK(strcmp(a, b) > 0);
	}
	t_reps_free(&rs);

	/* Any depth, with few fds: windows of at most 8 directories. */
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	low = rl;
	low.rlim_cur = 40;
	CHECK(deep_chain(dfd, 600) == 0);
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	lowered = 1;
	rc = remove_global(dfd, "chain", 0, 0, 0, -1, NULL, &sum);
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	lowered = 0;
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "chain"));
	CHECK(sum.removed[DE_T_DIR] == 600 && sum.removed[DE_T_FILE] == 600);
	/* Ordered, and with a limit half way up. */
	for (i = 0; i < 2; i++) {
		CHECK(deep_chain(dfd, 600) == 0);
		t_canon(dfd, "chain", "chain", &ref);
		CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
		lowered = 1;
		rc = ordered_run(dfd, "chain", DE_SCHED_GLOBAL, 0, 0,
				 i ? 700 : -1, &ref);
		CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
		lowered = 0;
		CHECK(rc == (i ? -EDQUOT : 0));
		t_names_free(&ref);
		t_cleanup_sub(dfd, "chain");
	}

	/* AUTO: slow reads stay global, fast ones go to the pool. */
	CHECK(shuffled_tree(dfd) == 0);
	slow_reads = 1;
	rc = remove_sched(dfd, "tree", DE_SCHED_AUTO, 0, 0, 0, -1, NULL, &sum);
	slow_reads = 0;
	CHECK(rc == 0 && !t_exists(dfd, "tree"));
	CHECK(nseen == NDIRS * NFILES + 1 && runs() == 1);
	CHECK(shuffled_tree(dfd) == 0);
	rc = remove_sched(dfd, "tree", DE_SCHED_AUTO, 0, 0, 0, -1, NULL, &sum);
	CHECK(rc == 0 && !t_exists(dfd, "tree"));
	CHECK(nseen == NDIRS * NFILES + 1 && runs() > NDIRS / 4);
	CHECK(sum.removed[DE_T_DIR] == NDIRS + 1);
	CHECK(deep_chain(dfd, 600) == 0);
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	lowered = 1;
	rc = remove_sched(dfd, "chain", DE_SCHED_AUTO, 0, 0, 0, -1, NULL, &sum);
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	lowered = 0;
	CHECK(rc == 0 && !t_exists(dfd, "chain"));
	CHECK(sum.removed[DE_T_DIR] == 600 && sum.removed[DE_T_FILE] == 600);
	/* Ordered AUTO: the batch walk on slow reads, the pool on fast
	 * ones, and the serial walk with a limit; canonical and exact. */
	for (i = 0; i < 4; i++) {
		CHECK(shuffled_tree(dfd) == 0);
		t_canon(dfd, "tree", "tree", &ref);
		slow_reads = i % 2;
		rc = ordered_run(dfd, "tree", DE_SCHED_AUTO, 0, 0,
				 i < 2 ? -1 : 123, &ref);
		slow_reads = 0;
		CHECK(rc == (i < 2 ? 0 : -EDQUOT));
		/* A limit inside the one window: entry by entry. */
		if (i == 0)
			CHECK(runs() > NDIRS / 4);
		else if (i == 1)
			CHECK(runs() == 1);
		t_names_free(&ref);
		t_cleanup_sub(dfd, "tree");
	}

	/* A mount point inside is kept, with what it holds (root). */
	CHECK(t_paths(dfd, "tree/a/mnt/", "tree/a/f", "tree/b/g", NULL) == 0);
	m = t_tmpfs("tree/a/mnt");
	if (m < 0) {
		ret = T_PASS;	/* the rest passed; a user cannot mount */
		goto out;
	}
	CHECK(t_file(m, "keep") == 0);
	rc = remove_global(dfd, "tree", 0, 0, 0, -1, &rs, &sum);
	CHECK(rc == 0);
	CHECK(t_result(&rs, "tree/a/mnt") == DE_R_MOUNT);
	CHECK(t_exists(m, "keep"));
	CHECK(t_result(&rs, "tree/a") == DE_R_NOT_EMPTY);
	CHECK(!t_exists(dfd, "tree/a/f") && !t_exists(dfd, "tree/b"));
	/* With one_fs it is another file system's, and kept as such. */
	t_reps_free(&rs);
	CHECK(t_paths(dfd, "tree/b/g", NULL) == 0);
	rc = remove_global(dfd, "tree", 0, 0, DE_F_ONE_FILE_SYSTEM, -1, &rs, &sum);
	CHECK(rc == 0);
	CHECK(t_result(&rs, "tree/a/mnt") == DE_R_OTHER_FS);
	CHECK(t_exists(m, "keep") && !t_exists(dfd, "tree/b"));
	/* And in an ordered run. */
	t_reps_free(&rs);
	CHECK(t_paths(dfd, "tree/b/g", NULL) == 0);
	rc = remove_global(dfd, "tree", 0, 0, DE_F_ORDERED, -1, &rs, &sum);
	CHECK(rc == 0);
	CHECK(t_result(&rs, "tree/a/mnt") == DE_R_MOUNT);
	CHECK(t_result(&rs, "tree/a") == DE_R_NOT_EMPTY);
	CHECK(t_exists(m, "keep") && !t_exists(dfd, "tree/b"));
	ret = T_PASS;
out:
	if (lowered)
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	t_reps_free(&rs);
	t_names_free(&ref);
	t_umount(m);
	free(seen);
	return ret;
}

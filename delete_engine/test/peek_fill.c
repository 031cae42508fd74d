/*
 * peek_fill: where the global schedule's read stops at the window's
 * entries short of the windows ahead, the holes of the window's order are
 * filled from the directories next on the stack, listed but not read
 * (peek.c): a regular file of each, touched by its path under its
 * directory's parent (sys.c de__touch_at).
 *
 * 60 directories of 32 files, the files made in a shuffled order;
 * windows of 256 entries (8 directories) and 20 directory blocks, so
 * that the read stops at the entries with the tree not all read, and
 * filling forced on (de_test_global_fill).  Read through the fault hook:
 *   - files of directories not read are touched ("dK/fN"), each before
 *     its own unlink, never after;
 *   - in each ascending run of the unlinks (a window's order), the
 *     touched files' inode-table blocks are holes of the run, none of
 *     its files in them, and no block is touched twice;
 *   - everything is removed;
 *   - with each file linked again ("hN") in the directory half the tree
 *     away, as in a cp -al snapshot beside its source, the same: the
 *     fillers are touched, everything goes, nothing fails;
 *   - with windows of 64 entries, where a window has more holes, the
 *     window keeps 16 fillers of the directories it has not read, a
 *     quarter of its entries (tunables.h DE__PEEK_PART);
 *   - a directory whose file is about to be touched is renamed out of
 *     the tree and a symlink to it put in its place: nothing of it is
 *     touched or removed (each file keeps its ctime), the symlink is
 *     not followed, and it fails as a symlink where a directory was.
 */
#include "tutil.h"

#define NDIRS	60
#define NF	32
#define NALL	(NDIRS * NF)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t inos[NALL];		/* file k's inode */
static struct {
	char op;			/* 'u' unlinked, 't' touched, 'h'
					 * second name unlinked */
	int k, peeked;
} ev[4 * NALL];
static size_t nev;
static int move_armed, moved = -1;
static char away[4200];

/* On the first touch of a peeked file, when armed: its directory
 * renamed to away/, a symlink to it in its place. */
static int swap_dir(int dfd, int d)
{
	char from[64], to[4300];

	snprintf(from, sizeof(from), "tree/d%d", d);
	snprintf(to, sizeof(to), "%s/d%d", away, d);
	if (renameat(dfd, from, AT_FDCWD, to) || symlinkat(to, dfd, from))
		return EPERM;	/* shows up as a failure */
	moved = d;
	return 0;
}

static int record(void *arg, int op, const char *name)
{
	const char *slash = strchr(name, '/');
	int one = 1, k, peeked = slash != NULL;
	char c = peeked ? slash[1] : name[0];

	/* Files ("fN") unlinked or touched; their second names ("hN")
	 * unlinked, which make runs too. */
	if (op != DE_OP_UNLINK && op != DE_OP_TOUCH)
		return 0;
	if (c != 'f' && !(c == 'h' && op == DE_OP_UNLINK))
		return 0;
	k = atoi(peeked ? slash + 2 : name + 1);
	pthread_mutex_lock(&mu);
	if (nev < sizeof(ev) / sizeof(ev[0]) && k >= 0 && k < NALL) {
		ev[nev].op = op == DE_OP_TOUCH ? 't' : c == 'h' ? 'h' : 'u';
		ev[nev].k = k;
		ev[nev++].peeked = peeked;
	}
	pthread_mutex_unlock(&mu);
	if (op == DE_OP_TOUCH && peeked &&
	    __atomic_compare_exchange_n(&move_armed, &one, 0, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return swap_dir(*(int *)arg, atoi(name + 1));
	return 0;
}

static uint64_t block(int k)
{
	return (inos[k] - 1) / 16;
}

/* Check the events: returns the peeked touches, or -1 after a line on
 * stderr.  A touch is in the run of the unlink after it (order.c fills
 * the holes before entry i just before unlinking it). */
static int check_events(void)
{
	static int run_of[4 * NALL];
	size_t i, j, last = SIZE_MAX;
	int run = 0, peeked = 0;

	for (i = 0; i < nev; i++) {
		if (ev[i].op == 't')
			continue;
		if (last != SIZE_MAX && inos[ev[i].k] < inos[ev[last].k])
			run++;
		run_of[i] = run;
		last = i;
	}
	for (i = nev, run = -1; i-- > 0;)
		if (ev[i].op != 't')
			run = run_of[i];
		else
			run_of[i] = run;
	for (i = 0; i < nev; i++) {
		if (ev[i].op != 't')
			continue;
		peeked += ev[i].peeked;
		for (j = 0; j < nev; j++) {
			int same = ev[j].k == ev[i].k;
			int near = run_of[j] == run_of[i] &&
				   block(ev[j].k) == block(ev[i].k);

			/* Its file unlinked after it; its block none of the
			 * run's files', and touched once in the run. */
			if ((ev[j].op == 'u' && same && j < i) ||
			    (ev[j].op != 't' && near) ||
			    (ev[j].op == 't' && j != i && near)) {
				fprintf(stderr, "touch %zu (f%d, block %llu, "
					"run %d): event %zu %c f%d\n", i,
					ev[i].k,
					(unsigned long long)block(ev[i].k),
					run_of[i], j, ev[j].op, ev[j].k);
				return -1;
			}
		}
		for (j = i + 1; j < nev && !(ev[j].op == 'u' && ev[j].k ==
					     ev[i].k); j++)
			;
		if (j == nev && ev[i].k / NF != moved) {
			fprintf(stderr, "touch %zu: f%d never unlinked\n", i,
				ev[i].k);
			return -1;
		}
	}
	return peeked;
}

/* The most files peeked that one run touched. */
static int most_peeked(void)
{
	static int n[4 * NALL];
	size_t i, j;
	int most = 0;

	memset(n, 0, sizeof(n));
	for (i = 0; i < nev; i++) {
		if (ev[i].op != 't' || !ev[i].peeked)
			continue;
		for (j = i + 1; j < nev && ev[j].op != 'u'; j++)
			;
		/* The runs, counted again: the unlinks before j that start
		 * one. */
		n[j]++;
	}
	for (i = 0, j = SIZE_MAX; i < nev; i++) {
		if (ev[i].op != 'u')
			continue;
		if (j != SIZE_MAX && inos[ev[i].k] >= inos[ev[j].k])
			n[i] += n[j];	/* the same run: carried */
		if (n[i] > most)
			most = n[i];
		j = i;
	}
	return most;
}

/* Remove tree: windows of ents entries and 20 blocks, filling.  Returns
 * the files that failed, or -1. */
static long remove_tree(int dfd, size_t ents)
{
	struct t_window w = { DE_SCHED_GLOBAL, 0, ents, 20, 1 };
	struct de_summary sum;
	int rc;

	nev = 0;
	rc = t_remove_as(dfd, &w, record, &dfd, &sum);
	if (rc && !(rc == -EIO && sum.failed)) {
		fprintf(stderr, "de_remove: %d\n", rc);
		return -1;
	}
	return (long)sum.failed;
}

/* The ctime of each file of the tree into made[]. */
static int ctimes(int dfd, struct timespec *made)
{
	char path[64];
	struct stat st;
	int k;

	for (k = 0; k < NALL; k++) {
		snprintf(path, sizeof(path), "tree/d%d/f%d", k / NF, k);
		if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW))
			return -1;
		made[k] = st.st_ctim;
	}
	return 0;
}

/* Remove the tree in windows of 256 entries: peeked files touched, by
 * the rules check_events() checks, and every file unlinked.  0, or -1
 * after a line on stderr. */
static int all_filled(int dfd, const char *what)
{
	int n, u = 0;
	size_t i;

	if (remove_tree(dfd, 256) != 0 || t_exists(dfd, "tree"))
		return -1;
	n = check_events();
	for (i = 0; i < nev; i++)
		u += ev[i].op == 'u';
	fprintf(stderr, "%s: %d files touched from directories not read, "
		"%d unlinked\n", what, n, u);
	return n > 0 && u == NALL ? 0 : -1;
}

int test(int dfd)
{
	static struct timespec made[NALL];
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	struct stat st;
	char path[4300];
	int ret = T_FAIL, n, i;

	/* Peeked files fill, one a hole; everything goes. */
	CHECK(t_shuffled_tree(dfd, NDIRS, NF, 11, inos) == 0);
	CHECK(all_filled(dfd, "plain") == 0);

	/* Hard links half the tree apart: a file's two names are read in
	 * different windows, or one read and one peeked. */
	CHECK(t_shuffled_tree(dfd, NDIRS, NF, 11, inos) == 0);
	for (i = 0; i < NALL; i++) {
		snprintf(path, sizeof(path), "tree/d%d/f%d", i / NF, i);
		snprintf(path + 2000, 64, "tree/d%d/h%d",
			 (i / NF + NDIRS / 2) % NDIRS, i);
		CHECK(linkat(dfd, path, dfd, path + 2000, 0) == 0);
	}
	CHECK(all_filled(dfd, "hard links") == 0);

	/* Windows of 64 entries: a window keeps at most 16 fillers
	 * (DE__PEEK_PART), where its holes are more. */
	CHECK(t_shuffled_tree(dfd, NDIRS, NF, 11, inos) == 0);
	CHECK(remove_tree(dfd, 64) == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(check_events() > 0);
	n = most_peeked();
	fprintf(stderr, "windows of 64 entries: at most %d peeked files "
		"touched a run\n", n);
	CHECK(n == 16);

	/* The directory of a peeked file swapped for a symlink to it, as
	 * the file is touched: nothing of it changes.  (The pause: a touch
	 * must show in a ctime of the clock's coarse ticks.) */
	CHECK(t_paths(dfd, "away/", NULL) == 0);
	snprintf(away, sizeof(away), "%s/away", t_base);
	CHECK(t_shuffled_tree(dfd, NDIRS, NF, 11, inos) == 0);
	CHECK(ctimes(dfd, made) == 0);
	nanosleep(&pause, NULL);
	move_armed = 1;
	moved = -1;
	n = (int)remove_tree(dfd, 256);
	fprintf(stderr, "d%d swapped: %d failed\n", moved, n);
	CHECK(n >= 1);
	CHECK(move_armed == 0 && moved >= 0);
	CHECK(check_events() > 0);
	CHECK(t_count(dfd, "tree") == 2);	/* tree and the symlink */
	snprintf(path, sizeof(path), "away/d%d", moved);
	CHECK(t_count(dfd, path) == NF + 1);
	for (i = 0; i < (int)nev; i++)
		CHECK(ev[i].op == 't' || ev[i].k / NF != moved);
	for (i = moved * NF; i < (moved + 1) * NF; i++) {
		snprintf(path, sizeof(path), "away/d%d/f%d", moved, i);
		CHECK(fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0);
		CHECK(st.st_ino == inos[i]);
		CHECK(st.st_ctim.tv_sec == made[i].tv_sec &&
		      st.st_ctim.tv_nsec == made[i].tv_nsec);
	}
	ret = T_PASS;
out:
	return ret;
}

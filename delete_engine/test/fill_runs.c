/*
 * fill_runs: where a huge directory's inode order is cut into runs of its
 * listing, the holes of each run are filled from the next run of the
 * same directory (global.c, "Filling the holes"), whether it goes
 * directory by directory (unlink.c: rsync hands the engine a huge
 * directory's names, so the seeds' million-file directory goes this
 * way) or as one window of the global schedule (global.c: rsync-rm),
 * with no window after it to fill from.
 *
 * The directory: NF files made one after another, their inodes rising,
 * and NP fifos among them, then all renamed in a shuffled order, so that
 * the listing (hash order on ext4, rename order on tmpfs) is unrelated to
 * inode order and each run skips inode-table blocks the later runs hold.
 * Runs of one directory block (de_test_global_window), filling forced on
 * (de_test_global_fill), no split between workers, under
 * DE_SCHED_GLOBAL and DE_SCHED_AUTO (whichever way its probe decides).
 * Read through the fault hook:
 *   - files are touched, each a regular file not unlinked yet (one of
 *     the DE__FILL_AHEAD runs after may be touched in each of them), and
 *     unlinked after its touch in a later run than the one being
 *     unlinked (the unlinks' inode order starts again between the touch
 *     and the file's unlink); no fifo is;
 *   - everything is removed;
 *   - with filling off, or under DE_SCHED_DIRS (which changes nothing it
 *     does not delete), nothing is touched.
 */
#include "tutil.h"

#define NF	3000	/* regular files */
#define NP	100	/* fifos among them */
#define NE	(NF + NP)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char ev[2 * NE][16];	/* "u NAME" / "t NAME", in order */
static size_t nev;
static char names[NE][8];
static ino_t inos[NE];

static int record(void *arg, int op, const char *name)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	if ((op == DE_OP_UNLINK || op == DE_OP_TOUCH) &&
	    nev < sizeof(ev) / sizeof(ev[0]))
		snprintf(ev[nev++], sizeof(ev[0]), "%c %s",
			 op == DE_OP_TOUCH ? 't' : 'u', name);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* The inode of the entry an event names (fNNNN, pNNNN: names[NNNN]). */
static ino_t ino_of(const char *ev_name)
{
	int i = atoi(ev_name + 1);

	return i >= 0 && i < NE && !strcmp(names[i], ev_name) ? inos[i] : 0;
}

/* tree/h: NE entries made in turn, every (NE / NP)th a fifo, then renamed
 * in a shuffled order to their final names (fNNNN, pNNNN). */
static int make_tree(int dfd)
{
	char from[32], to[32];
	unsigned perm[NE], x = 12345;
	struct stat st;
	int i;

	if (t_paths(dfd, "tree/h/", NULL))
		return -1;
	for (i = 0; i < NE; i++) {
		int fifo = i % (NE / NP) == NE / NP - 1;

		snprintf(from, sizeof(from), "tree/h/c%d", i);
		if (fifo ? mkfifoat(dfd, from, 0644) : t_file(dfd, from))
			return -1;
		snprintf(names[i], sizeof(names[i]), "%c%04d",
			 fifo ? 'p' : 'f', i);
		perm[i] = (unsigned)i;
	}
	for (i = NE - 1; i > 0; i--) {
		unsigned j, k;

		x = x * 1103515245u + 12345u;
		j = (x >> 8) % (unsigned)(i + 1);
		k = perm[i];
		perm[i] = perm[j];
		perm[j] = k;
	}
	for (i = 0; i < NE; i++) {
		snprintf(from, sizeof(from), "tree/h/c%u", perm[i]);
		snprintf(to, sizeof(to), "tree/h/%s", names[perm[i]]);
		if (renameat(dfd, from, dfd, to) ||
		    fstatat(dfd, to, &st, AT_SYMLINK_NOFOLLOW))
			return -1;
		inos[perm[i]] = st.st_ino;
	}
	return 0;
}

/* The run of each event: how often the unlinks' inode order started
 * again up to it. */
static size_t run_of[2 * NE];

static void number_runs(void)
{
	ino_t last = 0;
	size_t k, r = 0;

	for (k = 0; k < nev; k++) {
		ino_t ino = ev[k][0] == 'u' ? ino_of(ev[k] + 2) : 0;

		if (ino) {
			r += last && ino < last;
			last = ino;
		}
		run_of[k] = r;
	}
}

/* Remove tree under schedule, filling as fill says; returns the
 * touches, or -1. */
static int run(int dfd, int fill, unsigned schedule)
{
	int touches = 0;
	size_t i, j;

	nev = 0;
	if (t_remove_windowed(dfd, schedule, DE_F_NO_SPLIT, fill, record, &dfd))
		return -1;
	number_runs();
	for (i = 0; i < nev; i++) {
		if (ev[i][0] != 't')
			continue;
		touches++;
		for (j = 0; j < i; j++)
			if (ev[j][0] == 'u' && !strcmp(ev[j] + 2, ev[i] + 2))
				break;
		if (ev[i][2] != 'f' || j < i) {
			fprintf(stderr, "touch %zu: %s, %s\n", i, ev[i] + 2,
				j < i ? "unlinked before" : "not a file");
			return -1;
		}
		for (j = i + 1; j < nev; j++)
			if (ev[j][0] == 'u' && !strcmp(ev[j] + 2, ev[i] + 2))
				break;
		if (j == nev || run_of[j] <= run_of[i]) {
			fprintf(stderr, "touch %zu: %s, %s\n", i, ev[i] + 2,
				j == nev ? "never unlinked" :
				"unlinked in the same run");
			return -1;
		}
	}
	return touches;
}

int test(int dfd)
{
	int ret = T_FAIL, n;

	CHECK(make_tree(dfd) == 0);
	n = run(dfd, 1, DE_SCHED_GLOBAL);
	fprintf(stderr, "global, filled: %d touches\n", n);
	CHECK(n > 0);
	CHECK(!t_exists(dfd, "tree"));

	CHECK(make_tree(dfd) == 0);
	n = run(dfd, 1, DE_SCHED_AUTO);
	fprintf(stderr, "auto, filled: %d touches\n", n);
	CHECK(n > 0);
	CHECK(!t_exists(dfd, "tree"));

	CHECK(make_tree(dfd) == 0);
	n = run(dfd, -1, DE_SCHED_GLOBAL);
	CHECK(n == 0);
	CHECK(!t_exists(dfd, "tree"));

	CHECK(make_tree(dfd) == 0);
	n = run(dfd, -1, DE_SCHED_AUTO);
	CHECK(n == 0);
	CHECK(!t_exists(dfd, "tree"));

	CHECK(make_tree(dfd) == 0);
	n = run(dfd, 1, DE_SCHED_DIRS);
	CHECK(n == 0);
	CHECK(!t_exists(dfd, "tree"));
	ret = T_PASS;
out:
	return ret;
}

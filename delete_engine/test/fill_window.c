/*
 * fill_window: where the global schedule fills holes, a window holds
 * half the directory blocks of one that does not, the DE__FILL_AHEAD
 * windows ahead fill it, and the rest at the end of the tree goes with
 * the last part when smaller than it (global.c first_part).
 *
 * 125 directories of 10 files each (one directory block each by
 * global.c's estimate), the files made in a shuffled order so that each
 * window's inode order is one ascending run of the unlinks; windows of
 * 20 directory blocks (de_test_global_window).  Read through the fault
 * hook:
 *   - not filling: windows of 20 directories, about 6 runs;
 *   - filling: windows of 10, about 12 runs, and the last window at
 *     least 10 directories (the 5 or so left at the end go with the last
 *     part, never alone);
 *   - filling, the read cut by the window's entries (250) short of the
 *     windows ahead: windows of 10 still, about 12 runs, the holes the
 *     windows read leave filled from directories listed but not read
 *     (peek.c; test/peek_fill.c pins how).
 * Each way everything is removed, and no file is touched after its
 * unlink.
 */
#include "tutil.h"

#define NDIRS	125
#define NF	10
#define NALL	(NDIRS * NF)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t inos[NALL];		/* file k's inode */
static int seen[NALL];			/* the unlinked files, in order */
static size_t nseen;
static int touched_gone;		/* a touch after the file's unlink */

static int record(void *arg, int op, const char *name)
{
	size_t i;
	int k;

	(void)arg;
	if (name[0] != 'f' || (op != DE_OP_UNLINK && op != DE_OP_TOUCH))
		return 0;
	k = atoi(name + 1);
	pthread_mutex_lock(&mu);
	if (op == DE_OP_UNLINK && nseen < NALL)
		seen[nseen++] = k;
	for (i = 0; op == DE_OP_TOUCH && i < nseen; i++)
		touched_gone |= seen[i] == k;
	pthread_mutex_unlock(&mu);
	return 0;
}

/* The ascending runs of inodes in what was unlinked, and in *last the
 * directories of the last one. */
static size_t runs(size_t *last)
{
	size_t i, n = 0, from = 0;

	for (i = 0; i < nseen; i++)
		if (i == 0 || inos[seen[i]] < inos[seen[i - 1]]) {
			n++;
			from = i;
		}
	*last = (nseen - from) / NF;
	return n;
}

/* Remove tree with the global schedule, windows of 20 blocks and ents
 * entries, filling as fill says (de_test_global_fill); returns the runs,
 * or 0 when the removal failed. */
static size_t remove_with(int dfd, size_t ents, int fill, size_t *last)
{
	struct t_window w = { DE_SCHED_GLOBAL, 0, ents, 20, fill };
	struct de_summary sum;
	int rc;

	if (t_shuffled_tree(dfd, NDIRS, NF, 7, inos))
		return 0;
	nseen = 0;
	touched_gone = 0;
	rc = t_remove_as(dfd, &w, record, NULL, &sum);
	if (rc || t_exists(dfd, "tree") || nseen != NALL || touched_gone ||
	    sum.removed[DE_T_FILE] != NALL || sum.removed[DE_T_DIR] != NDIRS + 1) {
		fprintf(stderr, "ents %zu fill %d: rc %d, %zu unlinked%s\n",
			ents, fill, rc, nseen,
			touched_gone ? ", a file touched after its unlink" : "");
		return 0;
	}
	return runs(last);
}

int test(int dfd)
{
	size_t n, last;
	int ret = T_FAIL;

	n = remove_with(dfd, 1u << 20, -1, &last);
	fprintf(stderr, "not filling: %zu runs, the last of %zu directories\n",
		n, last);
	CHECK(n >= 5 && n <= 7);
	n = remove_with(dfd, 1u << 20, 1, &last);
	fprintf(stderr, "filling: %zu runs, the last of %zu directories\n",
		n, last);
	CHECK(n >= 10 && n <= 13);
	CHECK(last >= 10);
	n = remove_with(dfd, 250, 1, &last);
	fprintf(stderr, "filling, 250 entries a window: %zu runs\n", n);
	CHECK(n >= 10 && n <= 13);
	ret = T_PASS;
out:
	return ret;
}

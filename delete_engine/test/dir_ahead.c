/*
 * dir_ahead: where the global schedule fills, the directories next on
 * its stack are read ahead through the block device's cache (dirahead.c),
 * so that ext4's one-block-a-request reads of an indexed directory find
 * their blocks there.  What that saves is measured on the disk model
 * (docs/BENCHMARKS.md, "A million files and more in a tree"); this
 * pins which directories are asked for, and when.
 *
 * On a loop-mounted ext4 (exit 77 without root or mkfs.ext4): 40
 * directories of 200 files under tree/, windows of 4 directory blocks
 * (de_test_global_window), so that the tree goes in many reads.  Read
 * through the fault hook (DE_OP_AHEAD before a directory is mapped,
 * DE_OP_READ before it is read):
 *   - filling (de_test_global_fill 1): every directory of tree/ is asked
 *     for before it is read, each once between its asking and its read
 *     at most, and everything is removed;
 *   - filling without reading ahead (2), and not filling (-1): none is;
 *   - with the hook failing DE_OP_AHEAD for d07: it is not asked for,
 *     the rest are, and everything is removed.
 */
#include "tutil.h"

#define NDIRS	40
#define NF	200

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int asked[NDIRS], read_[NDIRS], early[NDIRS], refuse = -1;

static int hook(void *arg, int op, const char *name)
{
	int d, e = 0;

	(void)arg;
	if ((op != DE_OP_AHEAD && op != DE_OP_READ) || name[0] != 'd' ||
	    strlen(name) != 3)
		return 0;
	d = atoi(name + 1);
	if (d < 0 || d >= NDIRS)
		return 0;
	pthread_mutex_lock(&mu);
	if (op == DE_OP_READ) {
		early[d] = asked[d] > 0;
		read_[d]++;
	} else if (d == refuse) {
		e = EIO;
	} else if (!read_[d]) {
		asked[d]++;
	}
	pthread_mutex_unlock(&mu);
	return e;
}

static int make_tree(int wd)
{
	char path[96];
	int d, i;

	for (d = 0; d < NDIRS; d++) {
		snprintf(path, sizeof(path), "tree/d%02d/", d);
		if (t_paths(wd, path, NULL))
			return -1;
	}
	for (i = 0; i < NF; i++)
		for (d = 0; d < NDIRS; d++) {
			snprintf(path, sizeof(path),
				 "tree/d%02d/a-name-long-enough-%06d", d, i);
			if (t_file(wd, path))
				return -1;
		}
	return 0;
}

/* Make the tree and remove it as fill says; the directories asked for
 * before their read, or -1 when the removal or a check failed. */
static int run(int wd, int fill)
{
	struct t_window w = { DE_SCHED_GLOBAL, 0, 1u << 20, 4, fill };
	struct de_summary sum;
	int d, n = 0;

	memset(asked, 0, sizeof(asked));
	memset(read_, 0, sizeof(read_));
	memset(early, 0, sizeof(early));
	if (make_tree(wd) ||
	    t_remove_as(wd, &w, hook, NULL, &sum) || sum.failed ||
	    t_exists(wd, "tree") || sum.removed[DE_T_FILE] != NDIRS * NF ||
	    sum.removed[DE_T_DIR] != NDIRS + 1)
		return -1;
	for (d = 0; d < NDIRS; d++) {
		if (read_[d] != 1 || asked[d] > 2)
			return -1;
		n += early[d];
	}
	fprintf(stderr, "fill %d: %d of %d directories asked for before "
		"their reads\n", fill, n, NDIRS);
	return n;
}

int test(int dfd)
{
	int ret = T_FAIL, wd, n;

	(void)dfd;	/* the trees go on the ext4, in the temp dir's mnt */
	wd = t_loop_mount("128M", "mkfs.ext4 -q -F -b 4096");
	if (wd < 0) {
		ret = T_SKIP;
		goto out;
	}
	n = run(wd, 1);
#ifdef DE_PORTABLE
	CHECK(n >= 0);
#else
	CHECK(n == NDIRS);
#endif
	CHECK(run(wd, 2) == 0);
	CHECK(run(wd, -1) == 0);
	refuse = 7;
	n = run(wd, 1);
	CHECK(n >= 0);
	CHECK(!asked[7] && !early[7]);
#ifndef DE_PORTABLE
	CHECK(n == NDIRS - 1);
#endif
	ret = T_PASS;
out:
	t_umount(wd);
	return ret;
}

/*
 * fill_given: a huge directory handed to the engine in pieces, as rsync
 * reads one (de_order_targets(), de_order_cut(), de_opts.fill): each
 * call's last runs fill their holes from the targets held back for the
 * next call, which are marked changed and never removed by it.
 *
 * The directory: NF files made in a shuffled order (their inodes
 * unrelated to their names, so each run's order skips inode-table
 * blocks), NP fifos and ND subdirectories among them, each holding a
 * file.  It is read PIECE entries at a time, the held targets kept,
 * with runs of one directory block (de_test_global_window) and filling
 * forced on (de_test_global_fill), under DE_SCHED_GLOBAL and
 * DE_SCHED_AUTO.  Checked:
 *   - de_order_cut() leaves the directories with what goes now, and
 *     holds back the last runs of the files (rising inodes each), at
 *     most DE__FILL_AHEAD of them and never the first: what it holds is
 *     what the next call gets;
 *   - no held target is removed by the call it fills, each still the
 *     file it was, and one is touched (DE_OP_TOUCH) only if it is a
 *     regular file held for the call then running;
 *   - held files are touched by every call that has them, the calls
 *     whose directories' window holds subdirectories of it too (their
 *     files fill first), and everything is removed in the end;
 *   - with filling off, or under DE_SCHED_DIRS, nothing is held or
 *     touched, and everything is removed.
 */
#include "tutil.h"

#define NF	3000
#define NP	40
#define ND	20
#define NE	(NF + NP + ND)
#define PIECE	1000
#define HOLD_MAX 4	/* tunables.h DE__FILL_AHEAD */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char names[NE][32];
static struct de_target held[PIECE];	/* the running call's fill */
static size_t nheld;
static int bad, touched_held;
static int calls_held, calls_touched;	/* calls with a fill; that touched */

/* 1: name is a regular file held for the running call, 0: another held
 * target, -1: not held. */
static int is_held(const char *name)
{
	size_t i;

	for (i = 0; i < nheld; i++)
		if (!strcmp(held[i].name, name))
			return held[i].type == DE_T_FILE;
	return -1;
}

static int record(void *arg, int op, const char *name)
{
	int h;

	(void)arg;
	if (op != DE_OP_TOUCH && op != DE_OP_UNLINK)
		return 0;
	pthread_mutex_lock(&mu);
	h = is_held(name);
	if (op == DE_OP_TOUCH && h > 0)
		touched_held++;
	else if (op == DE_OP_TOUCH && h == 0)
		bad |= 1;	/* a held fifo touched */
	else if (op == DE_OP_UNLINK && h >= 0)
		bad |= 2;	/* a held target removed */
	pthread_mutex_unlock(&mu);
	return 0;
}

/* tree/NAME: NF files made in a shuffled order, NP fifos and ND
 * directories (each with a file). */
static int make_dir(int dfd, const char *name)
{
	int order[NF], i;
	char path[64];

	snprintf(path, sizeof(path), "tree/%s/", name);
	if (t_paths(dfd, path, NULL))
		return -1;
	t_shuffle(order, NF, 7);
	for (i = 0; i < NF + NP + ND; i++) {
		if (i < NF)
			snprintf(path, sizeof(path), "tree/%s/f%d", name,
				 order[i]);
		else if (i < NF + NP)
			snprintf(path, sizeof(path), "tree/%s/p%d", name, i);
		else
			snprintf(path, sizeof(path), "tree/%s/d%d/f", name, i);
		if (i < NF ? t_file(dfd, path) : i < NF + NP ?
		    mkfifoat(dfd, path, 0644) : t_paths(dfd, path, NULL))
			return -1;
	}
	return 0;
}

/* What de_order_cut() made of t[0..n), now to go: the directories and
 * at least a file before now, then at most HOLD_MAX runs of files
 * (rising inodes each).  Returns 0 when it holds. */
static int check_cut(const struct de_target *t, size_t n, size_t now)
{
	size_t i, files = 0, runs = 1;

	for (i = 0; i < now; i++)
		files += t[i].type != DE_T_DIR;
	for (i = now; i < n; i++) {
		if (t[i].type == DE_T_DIR)
			return -1;
		runs += i > now && t[i].ino < t[i - 1].ino;
	}
	return now == n || (files > 0 && runs <= HOLD_MAX) ? 0 : -1;
}

/* Remove tree/NAME's entries in pieces under schedule, filling as fill
 * says; returns the targets held back over the run, or -1. */
static long run(int dfd, const char *name, unsigned schedule, int fill)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .schedule = schedule,
				 .flags = DE_F_NO_SPLIT };
	struct de_target t[PIECE];
	struct de_opts o = { .max_delete = -1 };
	struct de_summary sum;
	struct dirent *d;
	de_ctx *ctx = NULL;
	DIR *dir = NULL;
	size_t n = 0, now, i, k = 0;
	long held_all = 0;
	int fd = -1, done = 0, was;
	char path[64];

	snprintf(path, sizeof(path), "tree/%s", name);
	fd = openat(dfd, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || de_test_ctx_new(&ctx, &cfg, record, NULL) ||
	    !(dir = fdopendir(dup(fd))))
		goto fail;
	de_test_global_window(ctx, 1u << 20, 1);
	de_test_global_fill(ctx, fill);
	while (!done) {
		while (n < PIECE && !(done = (d = readdir(dir)) == NULL)) {
			if (d->d_name[0] == '.')
				continue;
			snprintf(names[k], sizeof(names[k]), "%.31s", d->d_name);
			t[n].name = names[k++];
			t[n].type = de_type_of_dtype(d->d_type);
			t[n++].ino = d->d_ino;
		}
		de_order_targets(ctx, fd, t, n);
		now = done ? n : de_order_cut(ctx, fd, t, n);
		if (check_cut(t, n, now)) {
			fprintf(stderr, "cut %zu of %zu\n", now, n);
			goto fail;
		}
		pthread_mutex_lock(&mu);
		memcpy(held, t + now, (n - now) * sizeof(*t));
		nheld = n - now;
		pthread_mutex_unlock(&mu);
		held_all += (long)nheld;
		o.fill = nheld ? held : NULL;
		o.nfill = nheld;
		was = touched_held;
		if (de_remove(ctx, fd, t, now, NULL, &o, &sum) || sum.failed) {
			fprintf(stderr, "de_remove: %lu failed\n",
				(unsigned long)sum.failed);
			goto fail;
		}
		for (i = 0; i < nheld; i++)
			if (!t_exists(fd, held[i].name))
				bad |= 4;
		calls_held += nheld > 0;
		calls_touched += nheld > 0 && touched_held > was;
		memmove(t, t + now, (n - now) * sizeof(*t));
		n -= now;
	}
	closedir(dir);
	de_ctx_free(ctx);
	close(fd);
	/* Only the directory itself is left. */
	if (t_count(dfd, path) != 1)
		fprintf(stderr, "%ld left\n", t_count(dfd, path) - 1);
	return t_count(dfd, path) == 1 ? held_all : -1;
fail:
	fprintf(stderr, "run failed\n");
	if (dir)
		closedir(dir);
	de_ctx_free(ctx);
	if (fd >= 0)
		close(fd);
	return -1;
}

int test(int dfd)
{
	int ret = T_FAIL;
	long held_all;

	CHECK(make_dir(dfd, "g") == 0);
	held_all = run(dfd, "g", DE_SCHED_GLOBAL, 1);
	fprintf(stderr, "global: %ld held, %d touched, by %d of %d calls, "
		"bad %d\n", held_all, touched_held, calls_touched, calls_held,
		bad);
	CHECK(held_all > 0 && touched_held > 0 && bad == 0);
	CHECK(calls_touched == calls_held);

	CHECK(make_dir(dfd, "a") == 0);
	touched_held = 0;
	held_all = run(dfd, "a", DE_SCHED_AUTO, 1);
	fprintf(stderr, "auto: %ld held, %d touched, bad %d\n", held_all,
		touched_held, bad);
	CHECK(held_all > 0 && bad == 0);

	CHECK(make_dir(dfd, "n") == 0);
	touched_held = 0;
	CHECK(run(dfd, "n", DE_SCHED_GLOBAL, -1) == 0);
	CHECK(touched_held == 0 && bad == 0);

	CHECK(make_dir(dfd, "d") == 0);
	CHECK(run(dfd, "d", DE_SCHED_DIRS, 1) == 0);
	CHECK(touched_held == 0 && bad == 0);
	ret = T_PASS;
out:
	return ret;
}

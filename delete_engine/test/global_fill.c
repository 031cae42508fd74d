/*
 * global_fill: DE_SCHED_GLOBAL fills the holes of a window's inode order
 * with files of the window read ahead (order.c de__fill_runs_at): where the
 * order skips a few inode-table blocks, one regular file of a later
 * window in each is marked changed (sys.c de__touch_at, DE_OP_TOUCH).
 *
 * The tree: directories a and b whose files were made in groups of 32,
 * a's and b's in turn, so that each directory's inodes leave holes the
 * other's fill; b's groups hold a symlink and a fifo too.  Windows of
 * one directory block (de_test_global_window), filling forced on
 * (de_test_global_fill: the plan turns it on only on ext4 with a
 * journal).  Read through the fault hook:
 *   - files are touched, each a regular file ("f..."), of the other
 *     directory than the one being unlinked, and unlinked after its
 *     touch; no symlink or fifo is; everything is removed;
 *   - a file that a symlink to a file outside replaced between its
 *     listing and its touch: the outside file's ctime stays (the touch
 *     checks the file it holds, O_PATH, against the listing);
 *   - with filling off, nothing is touched, and the order is the same
 *     set of windows;
 *   - a directory its owner moves out of the tree when it is read (the
 *     read ahead): nothing of it is touched, and it keeps every file,
 *     each with its ctime, as moved_dir pins for the other schedules;
 *   - a touch changes its file (its ctime moves between the touch and
 *     the unlink), and still does under a seccomp filter that answers
 *     openat2() with EPERM, as some container runtimes do: a window's
 *     own filler is a single name, opened by openat() (sys.c
 *     open_beneath).
 */
#include "tutil.h"

#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#if defined(__x86_64__) && defined(SYS_openat2)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#define T_SECCOMP 1
#endif

#define NG	6	/* groups of each directory */
#define GS	32	/* files a group */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char ev[4 * NG * GS][40];	/* "u NAME" / "t NAME", in order */
static size_t nev;
static int swap_armed, move_armed, watch_armed;
static char watched[40];		/* the name of the file watched */
static struct timespec watch_before, watch_after;

/* Under the lock: a touch's file (name, of tree/a or tree/b) is watched,
 * its ctime taken before the touch and again before its unlink.  The
 * pause: a touch must show in a ctime of the clock's coarse ticks. */
static void watch(int dfd, int op, const char *name)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	struct timespec *into = NULL;
	char path[64];
	struct stat st;

	if (op == DE_OP_TOUCH && watch_armed) {
		watch_armed = 0;
		snprintf(watched, sizeof(watched), "%s", name);
		into = &watch_before;
	} else if (op == DE_OP_UNLINK && watched[0] &&
		   !strcmp(name, watched)) {
		into = &watch_after;
	}
	if (!into)
		return;
	snprintf(path, sizeof(path), "tree/%c/%s", name[1], name);
	if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		*into = st.st_ctim;
	if (into == &watch_before)
		nanosleep(&pause, NULL);
}
static char outside[4200], moved_from[4200], moved_to[4200];

static int record(void *arg, int op, const char *name)
{
	int dfd = *(int *)arg, one = 1;

	pthread_mutex_lock(&mu);
	if ((op == DE_OP_UNLINK || op == DE_OP_TOUCH) &&
	    nev < sizeof(ev) / sizeof(ev[0]))
		snprintf(ev[nev++], sizeof(ev[0]), "%c %s",
			 op == DE_OP_TOUCH ? 't' : 'u', name);
	watch(dfd, op, name);
	pthread_mutex_unlock(&mu);
	if (op == DE_OP_TOUCH &&
	    __atomic_compare_exchange_n(&swap_armed, &one, 0, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		char to[64];

		/* Its name now holds a symlink to a file outside. */
		snprintf(to, sizeof(to), "tree/%c/%s", name[1], name);
		if (unlinkat(dfd, to, 0) || symlinkat(outside, dfd, to))
			return EPERM;	/* shows up as a failure */
	}
	one = 1;
	if (op == DE_OP_READ && !strcmp(name, "b") &&
	    __atomic_compare_exchange_n(&move_armed, &one, 0, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return rename(moved_from, moved_to) ? EPERM : 0;
	return 0;
}

/* tree/a/faN and tree/b/fbN, made in groups of GS, a's and b's in turn;
 * b's groups with a symlink lbN and a fifo pbN. */
static int make_tree(int dfd)
{
	char path[64];
	int g, i;

	if (t_paths(dfd, "tree/a/", "tree/b/", NULL))
		return -1;
	for (g = 0; g < NG; g++) {
		for (i = 0; i < GS; i++) {
			snprintf(path, sizeof(path), "tree/a/fa%d", g * GS + i);
			if (t_file(dfd, path))
				return -1;
		}
		for (i = 0; i < GS; i++) {
			snprintf(path, sizeof(path), "tree/b/fb%d", g * GS + i);
			if (t_file(dfd, path))
				return -1;
		}
		snprintf(path, sizeof(path), "tree/b/lb%d", g);
		if (symlinkat("fb0", dfd, path))
			return -1;
		snprintf(path, sizeof(path), "tree/b/pb%d", g);
		if (mkfifoat(dfd, path, 0644))
			return -1;
	}
	return 0;
}

/* Remove tree, filling as fill says; returns the touches, or -1. */
static int run(int dfd, int fill)
{
	int touches = 0;
	size_t i, j;

	nev = 0;
	if (t_remove_windowed(dfd, DE_SCHED_GLOBAL, 0, fill, record, &dfd))
		return -1;
	for (i = 0; i < nev; i++) {
		const char *last = NULL;

		if (ev[i][0] != 't')
			continue;
		touches++;
		/* A regular file's name, of a later window than the file
		 * unlinked last, and unlinked after. */
		for (j = i; j-- > 0;)
			if (ev[j][0] == 'u') {
				last = ev[j] + 2;
				break;
			}
		for (j = i + 1; j < nev; j++)
			if (ev[j][0] == 'u' && !strcmp(ev[j] + 2, ev[i] + 2))
				break;
		if (ev[i][2] != 'f' || (last && last[1] == ev[i][3]) ||
		    j == nev) {
			fprintf(stderr, "touch %zu: %s (last unlinked %s)\n",
				i, ev[i] + 2, last ? last : "-");
			return -1;
		}
	}
	return touches;
}

/* Remove tree, filled, its first touch watched: 1 if the file's ctime
 * moved, 0 if not, -1 when the run failed or nothing was touched. */
static int touch_changes(int dfd)
{
	CHECK(make_tree(dfd) == 0);
	memset(&watch_before, 0, sizeof(watch_before));
	memset(&watch_after, 0, sizeof(watch_after));
	watched[0] = '\0';
	watch_armed = 1;
	CHECK(run(dfd, 1) > 0);
	CHECK(watched[0] && watch_before.tv_sec && watch_after.tv_sec);
	fprintf(stderr, "%s: ctime %ld.%09ld, then %ld.%09ld\n", watched,
		(long)watch_before.tv_sec, watch_before.tv_nsec,
		(long)watch_after.tv_sec, watch_after.tv_nsec);
	return watch_after.tv_sec != watch_before.tv_sec ||
	       watch_after.tv_nsec != watch_before.tv_nsec;
out:
	return -1;
}

#ifdef T_SECCOMP
/* From here on, this process's openat2() fails with EPERM. */
static int refuse_openat2(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0) == -1 &&
	       errno == EPERM ? 0 : -1;
}
#endif

int test(int dfd)
{
	struct stat before[GS], st, out0, out1;
	char path[64];
	int ret = T_FAIL, n, i;

	snprintf(outside, sizeof(outside), "%s/outside", t_base);
	CHECK(t_file(dfd, "outside") == 0);
	CHECK(fstatat(dfd, "outside", &out0, 0) == 0);

	/* Filled: touches, and the one swapped for a symlink is left. */
	CHECK(make_tree(dfd) == 0);
	swap_armed = 1;
	n = run(dfd, 1);
	fprintf(stderr, "filled: %d touches\n", n);
	CHECK(n > 0);
	CHECK(swap_armed == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(fstatat(dfd, "outside", &out1, 0) == 0);
	CHECK(out1.st_ctim.tv_sec == out0.st_ctim.tv_sec &&
	      out1.st_ctim.tv_nsec == out0.st_ctim.tv_nsec);

	/* Not filled: nothing touched. */
	CHECK(make_tree(dfd) == 0);
	n = run(dfd, -1);
	CHECK(n == 0);
	CHECK(!t_exists(dfd, "tree"));

	/* A directory moved out when read ahead keeps its files as they
	 * were. */
	CHECK(make_tree(dfd) == 0);
	CHECK(t_paths(dfd, "away/", NULL) == 0);
	snprintf(moved_from, sizeof(moved_from), "%s/tree/b", t_base);
	snprintf(moved_to, sizeof(moved_to), "%s/away/b", t_base);
	for (i = 0; i < GS; i++) {
		snprintf(path, sizeof(path), "tree/b/fb%d", i);
		CHECK(fstatat(dfd, path, &before[i], AT_SYMLINK_NOFOLLOW) == 0);
	}
	move_armed = 1;
	n = run(dfd, 1);
	CHECK(n >= 0);
	CHECK(move_armed == 0);
	CHECK(!t_exists(dfd, "tree"));
	CHECK(t_count(dfd, "away/b") == NG * (GS + 2) + 1);
	for (i = 0; i < (int)nev; i++)
		CHECK(ev[i][0] != 't' || ev[i][3] != 'b');
	for (i = 0; i < GS; i++) {
		snprintf(path, sizeof(path), "away/b/fb%d", i);
		CHECK(fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0);
		CHECK(st.st_ino == before[i].st_ino &&
		      st.st_ctim.tv_sec == before[i].st_ctim.tv_sec &&
		      st.st_ctim.tv_nsec == before[i].st_ctim.tv_nsec);
	}

	/* A touch changes its file; with openat2() refused too (the last
	 * case: the filter stays). */
#ifndef DE_PORTABLE
	CHECK(touch_changes(dfd) == 1);
#ifdef T_SECCOMP
	CHECK(refuse_openat2() == 0);
	CHECK(touch_changes(dfd) == 1);
#endif
#endif
	ret = T_PASS;
out:
	return ret;
}

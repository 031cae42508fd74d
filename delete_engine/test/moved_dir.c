/* moved_dir: a directory that its owner moves out of the tree after the
 * engine opened it and before its entries are removed (here: at the read
 * of its listing) keeps everything it holds, at its new place: its files,
 * its subdirectory and that one's file.  It is reported DE_R_VANISHED,
 * as stock rsync, which goes by path, finds it gone; the rest of the
 * tree is removed and de_remove() returns 0.  Before, the engine went on
 * through the fd it held and emptied the moved directory outside the
 * tree it was given, under every schedule.  Here under each: the
 * per-directory schedule (unordered, ordered, enter_dir), the serial walk
 * (max_delete, the dispose hook), the global window, and DE_SCHED_AUTO's
 * hand-over to the pool; with one worker and with two. */
#include "tutil.h"

static char from[4200], to[4200];

/* Runs on a worker or on the calling thread: *arg is claimed once. */
static int fault(void *arg, int op, const char *name)
{
	int *armed = arg, one = 1;

	if (op != DE_OP_READ || strcmp(name, "victim") ||
	    !__atomic_compare_exchange_n(armed, &one, 0, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return 0;
	/* The owner moves it away; the engine reads it through its fd. */
	return rename(from, to) ? EPERM : 0;	/* EPERM: shows up */
}

static int one(int dfd, enum t_mode mode, unsigned threads)
{
	struct de_config cfg = { .threads = threads, .max_delete = -1,
				 .schedule = DE_SCHED_DIRS };
	struct de_summary sum;
	struct t_reps rs = { 0 };
	struct t_rep *r;
	int ret = -1, rc, armed = 1;

	CHECK(t_paths(dfd, "tree/a/g", "tree/a/victim/f1", "tree/a/victim/f2",
		      "tree/a/victim/f3", "tree/a/victim/sub/s1", "tree/b/h",
		      "outside/", NULL) == 0);
	snprintf(from, sizeof(from), "%s/tree/a/victim", t_base);
	snprintf(to, sizeof(to), "%s/outside/victim", t_base);

	rc = t_remove_mode(dfd, "tree", mode, &cfg, fault, &armed, &rs, &sum);
	/* The owner did move it. */
	CHECK(__atomic_load_n(&armed, __ATOMIC_ACQUIRE) == 0);
	CHECK(t_exists(dfd, "outside/victim"));
	/* Everything it held is there: itself, f1-f3, sub and sub/s1. */
	CHECK(t_count(dfd, "outside/victim") == 6);
	CHECK(rc == 0);
	CHECK(sum.failed == 0 && sum.not_empty == 0);
	CHECK(t_result(&rs, "tree/a/victim") == DE_R_VANISHED);
	r = t_find(&rs, "tree/a/victim/f1");
	CHECK(!r || r->result == DE_R_VANISHED);
	CHECK(t_result(&rs, "tree") == DE_R_REMOVED);
	CHECK(!t_exists(dfd, "tree"));
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "case %s, threads=%u\n", t_mode_name[mode],
			threads);
	t_reps_free(&rs);
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "outside");
	return ret;
}

int test(int dfd)
{
	int ret = T_PASS, m;
	unsigned th;

	t_fail_on_alarm("moved_dir");
	alarm(60);
	/* Every case, so that a failure names all the schedules it is in. */
	for (m = 0; m < T_M_COUNT; m++)
		for (th = 1; th <= 2; th++)
			if (one(dfd, (enum t_mode)m, th))
				ret = T_FAIL;
	return ret;
}

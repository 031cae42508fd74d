/* vanished_dir: a directory that another process removes after the engine
 * listed its parent (before the engine opens it, between the open and the
 * read, or while the engine unlinks its files) is reported DE_R_VANISHED,
 * not as a failure, and its parents are still removed: de_remove()
 * returns 0 and nothing is left.  Before, a directory removed between the
 * open and the read was a failed read (getdents64 refuses a dead
 * directory with ENOENT), which kept its parents, so two rsync runs on one
 * tree both exited 23 and could leave an empty directory behind (issue
 * 22).  In every mode: unordered, ordered, enter_dir, serial (max_delete). */
#include "tutil.h"

enum when { W_OPEN, W_READ, W_UNLINK, W_COUNT };

static const char *when_name[] = { "open", "read", "unlink" };
/* Each in the default schedule, DE_SCHED_AUTO. */
static const enum t_mode modes[] = { T_M_UNORDERED, T_M_ORDERED, T_M_HOOK,
				     T_M_LIMIT };

static char victim[4200];

/* rm -r of the victim, as the other process would: it has two files. */
static int remove_victim(void)
{
	char p[4300];
	int rc = 0;

	snprintf(p, sizeof(p), "%s/f1", victim);
	rc |= unlink(p) && errno != ENOENT;
	snprintf(p, sizeof(p), "%s/f2", victim);
	rc |= unlink(p) && errno != ENOENT;
	rc |= rmdir(victim);
	return rc;
}

/* Runs on workers: *arg is read and claimed atomically. */
static int fault(void *arg, int op, const char *name)
{
	int *when = arg, w = __atomic_load_n(when, __ATOMIC_ACQUIRE);
	int hit = 0;

	switch (w) {
	case W_OPEN:
		hit = op == DE_OP_OPEN && !strcmp(name, "victim");
		break;
	case W_READ:
		hit = op == DE_OP_READ && !strcmp(name, "victim");
		break;
	case W_UNLINK:
		/* The first of its files the engine unlinks. */
		hit = op == DE_OP_UNLINK &&
		      (!strcmp(name, "f1") || !strcmp(name, "f2"));
		break;
	default:
		break;
	}
	if (!hit || !__atomic_compare_exchange_n(when, &w, W_COUNT, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
		return 0;	/* once */
	return remove_victim() ? EPERM : 0;	/* EPERM: shows up */
}

static int one(int dfd, enum when when, enum t_mode mode, unsigned threads)
{
	struct de_config cfg = { .threads = threads, .max_delete = -1 };
	struct de_summary sum;
	struct t_reps rs = { 0 };
	int ret = -1, rc;
	int cur = when;

	CHECK(t_paths(dfd, "tree/a/g", "tree/a/victim/f1", "tree/a/victim/f2",
		      "tree/b/h", NULL) == 0);
	snprintf(victim, sizeof(victim), "%s/tree/a/victim", t_base);

	rc = t_remove_mode(dfd, "tree", mode, &cfg, fault, &cur, &rs, &sum);
	/* The other process did its part. */
	CHECK(__atomic_load_n(&cur, __ATOMIC_ACQUIRE) == W_COUNT);
	CHECK(rc == 0);
	CHECK(sum.failed == 0 && sum.not_empty == 0 && sum.vanished >= 1);
	CHECK(t_result(&rs, "tree/a/victim") == DE_R_VANISHED);
	CHECK(t_result(&rs, "tree/a") == DE_R_REMOVED);
	CHECK(t_result(&rs, "tree") == DE_R_REMOVED);
	CHECK(!t_exists(dfd, "tree"));
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "case %s, %s, threads=%u\n", when_name[when],
			t_mode_name[mode], threads);
	t_reps_free(&rs);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL, w;
	size_t m;
	unsigned th;

	t_fail_on_alarm("vanished_dir");
	alarm(60);
	for (w = 0; w < W_COUNT; w++)
		for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
			for (th = 1; th <= 2; th++)
				CHECK(one(dfd, (enum when)w, modes[m],
					  th) == 0);
	ret = T_PASS;
out:
	return ret;
}

/* vanished_dir: a directory that another process removes after the engine
 * listed its parent (before the engine opens it, between the open and the
 * read, or while the engine unlinks its files) is reported DE_R_VANISHED,
 * not as a failure, and its parents are still removed: de_remove()
 * returns 0 and nothing is left.  Before, a directory removed between the
 * open and the read was a failed read (getdents64 refuses a dead
 * directory with ENOENT), which kept its parents, so two rsync runs on one
 * tree both exited 23 and could leave an empty directory behind (issue
 * 22).  In every mode: unordered, ordered, enter_dir, serial. */
#include "tutil.h"

enum when { W_OPEN, W_READ, W_UNLINK, W_COUNT };
enum mode { M_UNORDERED, M_ORDERED, M_HOOK, M_SERIAL, M_COUNT };

static const char *when_name[] = { "open", "read", "unlink" };
static const char *mode_name[] = { "unordered", "ordered", "enter_dir",
				   "serial" };

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

static int enter(void *arg, const char *rel, struct de_dirent *e, size_t n)
{
	(void)arg; (void)rel; (void)e; (void)n;
	return 0;
}

static int one(int dfd, enum when when, enum mode mode, unsigned threads)
{
	struct de_config cfg = { .threads = threads, .max_delete = -1 };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct t_reps rs = { 0 };
	struct t_rep *r;
	de_ctx *ctx = NULL;
	int ret = -1, rc;
	int cur = when;

	if (mode == M_ORDERED)
		cfg.flags |= DE_F_ORDERED;
	if (mode == M_SERIAL)
		cfg.max_delete = 1000;
	h.arg = &rs;
	h.report = t_collect;
	if (mode == M_HOOK)
		h.enter_dir = enter;
	CHECK(t_paths(dfd, "tree/a/g", "tree/a/victim/f1", "tree/a/victim/f2",
		      "tree/b/h", NULL) == 0);
	snprintf(victim, sizeof(victim), "%s/tree/a/victim", t_base);

	CHECK(de_test_ctx_new(&ctx, &cfg, fault, &cur) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	/* The other process did its part. */
	CHECK(__atomic_load_n(&cur, __ATOMIC_ACQUIRE) == W_COUNT);
	CHECK(rc == 0);
	CHECK(sum.failed == 0 && sum.not_empty == 0 && sum.vanished >= 1);
	r = t_find(&rs, "tree/a/victim");
	CHECK(r && r->result == DE_R_VANISHED);
	r = t_find(&rs, "tree/a");
	CHECK(r && r->result == DE_R_REMOVED);
	r = t_find(&rs, "tree");
	CHECK(r && r->result == DE_R_REMOVED);
	CHECK(!t_exists(dfd, "tree"));
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "case %s, %s, threads=%u\n", when_name[when],
			mode_name[mode], threads);
	de_ctx_free(ctx);
	t_reps_free(&rs);
	t_cleanup_sub(dfd, "tree");
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL, w, m;
	unsigned th;

	t_fail_on_alarm("vanished_dir");
	alarm(60);
	for (w = 0; w < W_COUNT; w++)
		for (m = 0; m < M_COUNT; m++)
			for (th = 1; th <= 2; th++)
				CHECK(one(dfd, (enum when)w, (enum mode)m,
					  th) == 0);
	ret = T_PASS;
out:
	return ret;
}

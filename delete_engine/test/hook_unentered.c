/* hook_unentered: with enter_dir set (how rsync applies its filter rules),
 * a directory inside a deleted subtree that the engine cannot enter is
 * still finished and reported, and de_remove() returns: open refused
 * (EACCES, EIO), the directory swapped for a symlink, removed by someone
 * else after its parent was listed (reported DE_R_VANISHED, and its parent
 * is then removed), or a mount point (as root).  Before, nothing made such
 * a directory final in hook mode and the walk waited for it forever
 * (issue 22), so an alarm turns a hang into a failure.  Hook mode runs
 * with 1 and 2 workers, and serially (max_delete) for comparison. */
#include "tutil.h"
#include <signal.h>
#include <sys/mount.h>

enum how { H_EACCES, H_EIO, H_SWAP, H_GONE, H_MOUNT, H_COUNT };

static const char *how_name[] = { "EACCES", "EIO", "swap", "gone", "mount" };

static char victim[4200], moved[4200], mnt_path[4200];
static volatile sig_atomic_t mounted;

static int fault(void *arg, int op, const char *name)
{
	const enum how *how = arg;
	char inner[4300];

	if (op != DE_OP_OPEN || strcmp(name, "victim"))
		return 0;
	switch (*how) {
	case H_EACCES:
		return EACCES;
	case H_EIO:
		return EIO;
	case H_SWAP:
		/* Another process swaps the directory for a symlink between
		 * the listing and the open. */
		if (rename(victim, moved) || symlink(moved, victim))
			return EPERM;	/* shows up as a wrong err */
		return 0;
	case H_GONE:
		/* Another process removes it between the listing and the
		 * open: the real open then fails with ENOENT. */
		snprintf(inner, sizeof(inner), "%s/inner", victim);
		if (unlink(inner) || rmdir(victim))
			return EPERM;
		return 0;
	default:
		return 0;
	}
}

struct hk {
	struct t_reps rs;
	int depth, bad;
};

static void report(void *arg, const struct de_report *r)
{
	t_collect(&((struct hk *)arg)->rs, r);
}

static int enter(void *arg, const char *rel, struct de_dirent *e, size_t n)
{
	(void)rel; (void)e; (void)n;
	((struct hk *)arg)->depth++;
	return 0;
}

static void leave(void *arg, const char *rel)
{
	struct hk *h = arg;

	(void)rel;
	if (--h->depth < 0)
		h->bad = 1;
}

static void on_alarm(int sig)
{
	static const char msg[] = "hook_unentered: de_remove() hangs\n";

	(void)sig;
	if (mounted)
		umount2(mnt_path, MNT_DETACH);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(T_FAIL);
	_exit(T_FAIL);
}

/* Returns 0 (passed), 1 (failed) or 77 (this case needs root). */
static int one(int dfd, enum how how, unsigned threads, long long maxdel)
{
	struct de_config cfg = { .threads = threads, .max_delete = maxdel };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct hk hk = { { 0 }, 0, 0 };
	struct t_rep *r;
	de_ctx *ctx = NULL;
	int ret = 1, rc, top = -1, a = -1, v = -1, fd;
	enum how cur = how;

	h.arg = &hk;
	h.report = report;
	h.enter_dir = enter;
	h.leave_dir = leave;
	top = t_dir(dfd, "tree");
	CHECK(top >= 0);
	a = t_dir(top, "a");
	CHECK(a >= 0 && t_file(a, "f") == 0);
	fd = t_dir(a, "z");
	CHECK(fd >= 0 && t_file(fd, "y") == 0);
	close(fd);
	fd = t_dir(top, "b");
	CHECK(fd >= 0 && t_file(fd, "g") == 0);
	close(fd);
	v = t_dir(a, "victim");
	CHECK(v >= 0);
	snprintf(victim, sizeof(victim), "%s/tree/a/victim", t_base);
	snprintf(moved, sizeof(moved), "%s/moved", t_base);
	if (how == H_MOUNT) {
		if (geteuid() != 0) {
			ret = T_SKIP;
			goto out;
		}
		snprintf(mnt_path, sizeof(mnt_path), "%s", victim);
		close(v);
		v = -1;
		if (mount("tmpfs", mnt_path, "tmpfs", 0, "size=1m")) {
			ret = T_SKIP;
			goto out;
		}
		mounted = 1;
		v = open(mnt_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		CHECK(v >= 0);
	}
	CHECK(t_file(v, "inner") == 0);

	CHECK(de_test_ctx_new(&ctx, &cfg, fault, &cur) == 0);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	CHECK(hk.depth == 0 && !hk.bad);
	r = t_find(&hk.rs, "tree/a/victim");
	CHECK(r);
	CHECK(!t_exists(dfd, "tree/b") && !t_exists(dfd, "tree/a/z") &&
	      !t_exists(dfd, "tree/a/f"));
	switch (how) {
	case H_EACCES:
	case H_EIO:
	case H_SWAP:
		CHECK(rc == -EIO);
		CHECK(r->result == DE_R_FAILED && r->op == DE_OP_OPEN);
		if (how == H_SWAP) {
			CHECK(r->err == ELOOP || r->err == ENOTDIR);
			CHECK(t_exists(dfd, "moved/inner"));
		} else {
			CHECK(r->err == (how == H_EIO ? EIO : EACCES));
		}
		CHECK(sum.failed == 1);
		break;
	case H_GONE:
		CHECK(rc == 0);
		CHECK(r->result == DE_R_VANISHED);
		CHECK(sum.vanished == 1 && sum.failed == 0);
		break;
	case H_MOUNT:
		CHECK(rc == 0);
		CHECK(r->result == DE_R_MOUNT);
		CHECK(t_exists(v, "inner"));
		break;
	default:
		break;
	}
	if (how == H_GONE) {
		/* Its parents go: nothing was kept. */
		CHECK(!t_exists(dfd, "tree"));
		r = t_find(&hk.rs, "tree/a");
		CHECK(r && r->result == DE_R_REMOVED);
	} else {
		r = t_find(&hk.rs, "tree/a");
		CHECK(r && r->result == DE_R_NOT_EMPTY);
		r = t_find(&hk.rs, "tree");
		CHECK(r && r->result == DE_R_NOT_EMPTY);
	}
	ret = 0;
out:
	if (ret == 1)
		fprintf(stderr, "case %s threads=%u max_delete=%lld\n",
			how_name[how], threads, maxdel);
	de_ctx_free(ctx);
	t_reps_free(&hk.rs);
	if (v >= 0)
		close(v);
	if (a >= 0)
		close(a);
	if (top >= 0)
		close(top);
	if (mounted) {
		if (umount2(mnt_path, MNT_DETACH))
			fprintf(stderr, "umount %s failed\n", mnt_path);
		mounted = 0;
	}
	t_cleanup_sub(dfd, "tree");
	t_cleanup_sub(dfd, "moved");
	return ret;
}

int main(void)
{
	static const unsigned threads[] = { 1, 2 };
	static const long long maxdel[] = { -1, 1000 };
	int ret = T_FAIL, dfd, how, i, j, rc, skipped = 0;

	signal(SIGALRM, on_alarm);
	alarm(30);
	dfd = t_mktemp();
	if (dfd < 0)
		return T_FAIL;
	for (how = 0; how < H_COUNT; how++)
		for (i = 0; i < 2; i++)
			for (j = 0; j < 2; j++) {
				rc = one(dfd, (enum how)how, threads[i],
					 maxdel[j]);
				if (rc == T_SKIP)
					skipped = 1;
				else
					CHECK(rc == 0);
			}
	if (skipped)
		fprintf(stderr, "mount cases skipped (not root)\n");
	ret = T_PASS;
out:
	close(dfd);
	t_cleanup();
	return ret;
}

/* plan: the schedule a call takes, and why (policy.c de__plan), as
 * de_explain() tells it: per file system (the fs_policy table), per
 * option and hook, and after a real call. */
#include "tutil.h"

#define EXT4	0xef53L
#define BTRFS	0x9123683eL
#define TMPFS	0x01021994L
#define NFS	0x6969L

/* Hooks that are only there to be seen: plans are not run. */
static int enter_cb(void *arg, const char *relpath, struct de_dirent *ents,
		    size_t n)
{
	(void)arg; (void)relpath; (void)ents; (void)n;
	return 0;
}

static enum de_action ask_cb(void *arg, int dirfd, const char *name,
			     const char *relpath, int rmdir)
{
	(void)arg; (void)dirfd; (void)name; (void)relpath; (void)rmdir;
	return DE_A_DELETE;
}

static enum de_action dispose_cb(void *arg, int dirfd, const char *name,
				 const char *relpath, enum de_type type)
{
	(void)arg; (void)dirfd; (void)name; (void)relpath; (void)type;
	return DE_A_DELETE;
}

enum hk { H_NONE, H_ENTER, H_ASK, H_DISPOSE };

/* A call's settings (0: the default; limit 0: none) and what its plan
 * line starts with. */
struct want {
	enum de_schedule sched;
	long fs;
	unsigned flags;			/* de_opts.flags */
	long long limit;
	enum hk hooks;
	const char *line;
};

static const struct want wants[] = {
	/* The file system's row. */
	{ .fs = EXT4, .line = "ext4: global windows (a local file system); "
	  "if the first reads are fast: directory by directory; 2 workers, "
	  "gate 2, reader helps, inode order" },
	{ .fs = BTRFS, .line = "btrfs: serial walk (one unlinker in "
	  "canonical order pays here)" },
	{ .fs = NFS, .line = "nfs: directory by directory (every request "
	  "waits for a server); 64 workers, gate 0, listing order" },
	{ DE_SCHED_DIRS, TMPFS, .line = "tmpfs: directory by directory "
	  "(asked for); 2 workers, gate 0, listing order, splits huge "
	  "directories" },
	{ DE_SCHED_DIRS, .line = "other: directory by directory" },
	/* Ordered reports and a limit: the batch walk, and after a fast
	 * probe, the ordered or the serial walk. */
	{ .fs = EXT4, .flags = DE_F_ORDERED, .line = "ext4: batch walk "
	  "(global windows, reports in order) (a local file system); if the "
	  "first reads are fast: directory by directory, reports in order" },
	{ .fs = EXT4, .limit = 5, .line = "ext4: batch walk (global windows, "
	  "reports in order) (a local file system); if the first reads are "
	  "fast: serial walk" },
	{ DE_SCHED_GLOBAL, EXT4, .line = "ext4: global windows (asked for); "
	  "2 workers" },
	{ DE_SCHED_DIRS, EXT4, .limit = 5, .line = "ext4: serial walk (asked "
	  "for)" },
	/* Entry by entry: the serial or the ordered walk. */
	{ .fs = EXT4, .flags = DE_F_DRY_RUN, .line = "ext4: serial walk (a dry "
	  "run decides entry by entry)" },
	{ .fs = EXT4, .hooks = H_ASK, .line = "ext4: serial walk (the hooks "
	  "decide entry by entry)" },
	{ .fs = EXT4, .hooks = H_ENTER, .line = "ext4: directory by directory, "
	  "reports in order (the hooks decide entry by entry)" },
	{ .fs = EXT4, .hooks = H_DISPOSE, .line = "ext4: serial walk (the "
	  "hooks decide entry by entry)" },
	/* ... unless the hooks may run ahead. */
	{ .fs = EXT4, .flags = DE_F_HOOKS_AHEAD, .hooks = H_DISPOSE,
	  .line = "ext4: batch walk (global windows, reports in order) (a "
	  "local file system); if the first reads are fast: serial walk" },
};

static int check(const struct want *w)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .schedule = w->sched };
	struct de_opts o = { .flags = w->flags,
			     .max_delete = w->limit ? w->limit : -1 };
	struct de_hooks h = { 0 };
	de_ctx *ctx = NULL;
	char line[256];
	int n, ok = 0;

	if (w->fs == NFS)
		cfg.threads = 0;	/* threads_for() decides */
	if (w->hooks == H_ENTER)
		h.enter_dir = enter_cb;
	else if (w->hooks == H_ASK)
		h.ask_dir = ask_cb;
	else if (w->hooks == H_DISPOSE)
		h.dispose = dispose_cb;
	if (de_ctx_new(&ctx, &cfg))
		return 0;
	n = de_test_plan(ctx, w->fs, &h, &o, line, sizeof(line));
	if (n >= (int)sizeof(line) || n < 0)
		fprintf(stderr, "plan: de_test_plan: %d\n", n);
	else if (strncmp(line, w->line, strlen(w->line)))
		fprintf(stderr, "plan: got  \"%s\"\n      want \"%s...\"\n",
			line, w->line);
	else
		ok = 1;
	de_ctx_free(ctx);
	return ok;
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .schedule = DE_SCHED_DIRS };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	de_ctx *ctx = NULL;
	char line[256], small[8];
	int ret = T_FAIL, n;
	size_t i;

	for (i = 0; i < sizeof(wants) / sizeof(wants[0]); i++)
		CHECK(check(&wants[i]));

	/* A real call: nothing to tell before it, its plan after. */
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	CHECK(de_explain(ctx, line, sizeof(line)) == -EINVAL);
	CHECK(t_paths(dfd, "tree/a/f", "tree/g", NULL) == 0);
	CHECK(de_remove(ctx, dfd, &t, 1, NULL, NULL, NULL) == 0);
	CHECK(!t_exists(dfd, "tree"));
	n = de_explain(ctx, line, sizeof(line));
	CHECK(n > 0 && (size_t)n == strlen(line));
	CHECK(strstr(line, ": directory by directory (asked for); 2 workers"));
	/* snprintf()'s contract: the length it would have written. */
	CHECK(de_explain(ctx, small, sizeof(small)) == n);
	CHECK(strlen(small) == sizeof(small) - 1 && !strncmp(small, line, 7));
	ret = T_PASS;
out:
	de_ctx_free(ctx);
	return ret;
}

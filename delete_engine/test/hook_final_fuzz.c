/* hook_final_fuzz: whatever a directory's scan finds, it becomes final and
 * is reported once, and de_remove() returns.  Random trees (fixed seeds)
 * meet injected faults on open, read, stat, unlink and rmdir (EACCES, EIO,
 * ENOTDIR, ENOENT, ...), directories really removed or swapped for a
 * symlink by "another process" just before the engine opens or reads
 * them, entries kept by the enter_dir hook and, as root, a tmpfs mount
 * point, in every mode a hook selects: enter_dir alone (workers remove),
 * with max_delete, with a dry run, with dispose, and without enter_dir
 * (ordered and unordered).  Checked per run: the reports name each entry
 * at most once; an emptied directory (REMOVED, NOT_EMPTY) has every entry
 * reported, each before it; every reported entry's directory is reported;
 * the summary counts every report; the return value agrees with it; what
 * was reported removed is gone and what was kept is there; enter_dir and
 * leave_dir nest; no fd is left open.  Some runs are cancelled from
 * enter_dir, and must then return -ECANCELED.  A hang fails by the alarm
 * (issue 22: in hook mode an unentered directory never became final).
 * Bounded: SEEDS runs or DEADLINE seconds, whichever comes first. */
#include "tutil.h"
#include <dirent.h>
#include <time.h>

#define SEEDS		400
#define DEADLINE	40	/* seconds; TSan runs are ~10x slower */
#define RUN_ALARM	20	/* seconds for one de_remove(): a hang */
#define MAXE		160

enum act { A_NONE, A_FAULT, A_VANISH, A_SWAP };

struct ent {
	int parent;		/* -1: the target "tree" itself */
	int isdir;
	char path[128];		/* relative to the temp dir */
	enum act act;
	int op, err;		/* A_FAULT: pretend op failed with err;
				 * A_VANISH, A_SWAP: done before op */
	int keep;		/* enter_dir says DE_A_KEEP */
	int dispose;		/* dispose says DE_A_KEEP (1) or DONE (2) */
	int mount;		/* a tmpfs is mounted here */
	int acted;		/* A_VANISH or A_SWAP was done */
	int nrep;
	int res, rop, seen_at;
};

static struct ent ents[MAXE];
static int nents;
static unsigned rng;
static int base_fd = -1;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % n;
}

static int add(int parent, int isdir)
{
	struct ent *e = &ents[nents];

	memset(e, 0, sizeof(*e));
	e->parent = parent;
	e->isdir = isdir;
	snprintf(e->path, sizeof(e->path), "%s/%c%d",
		 parent < 0 ? "tree" : ents[parent].path, isdir ? 'd' : 'f',
		 nents);
	return nents++;
}

static void gen(int parent, int depth)
{
	int nf = (int)rnd(4), nd = depth < 4 ? (int)rnd(depth < 2 ? 4 : 3) : 0;
	int i;

	for (i = 0; i < nf && nents < MAXE; i++)
		add(parent, 0);
	for (i = 0; i < nd && nents < MAXE - 1; i++)
		gen(add(parent, 1), depth + 1);
}

/* e pretends op fails with err. */
static void set_fault(struct ent *e, int op, int err)
{
	e->act = A_FAULT;
	e->op = op;
	e->err = err;
}

/* Give entries their faults, actions and hook decisions.  The rnd()
 * calls keep their order: a seed's plan stays what it was. */
static void plan(int can_mount)
{
	static const int open_errs[] = { EACCES, EIO, ENOTDIR, ENOENT, ELOOP,
					 EMFILE, ESTALE };
	static const int other_errs[] = { EIO, ENOENT, EACCES, EBUSY };
	int i, op;

	for (i = 0; i < nents; i++) {
		struct ent *e = &ents[i];
		unsigned r = rnd(100);

		if (e->isdir) {
			if (r < 10) {
				set_fault(e, DE_OP_OPEN, open_errs[rnd(7)]);
			} else if (r < 15) {
				op = rnd(2) ? DE_OP_READ : DE_OP_STAT;
				set_fault(e, op, other_errs[rnd(4)]);
			} else if (r < 19) {
				set_fault(e, DE_OP_RMDIR, other_errs[rnd(4)]);
			} else if (r < 24) {
				e->act = A_VANISH;
				e->op = rnd(2) ? DE_OP_OPEN : DE_OP_READ;
			} else if (r < 27) {
				e->act = A_SWAP;
				e->op = DE_OP_OPEN;
			}
		} else if (r < 6) {
			set_fault(e, DE_OP_UNLINK, other_errs[rnd(4)]);
		} else if (r < 9) {
			e->dispose = 1 + (int)rnd(2);
		}
		if (rnd(100) < 4)
			e->keep = 1;
	}
	if (can_mount && rnd(4) == 0) {
		int dirs[MAXE], n = 0;

		/* Not below a directory that "another process" removes: it
		 * could not, and would leave the rest half gone. */
		for (i = 0; i < nents; i++) {
			int p = i;

			while (p >= 0 && (ents[p].act == A_NONE ||
					  ents[p].act == A_FAULT))
				p = ents[p].parent;
			if (ents[i].isdir && ents[i].act == A_NONE && p < 0)
				dirs[n++] = i;
		}
		if (n)
			ents[dirs[rnd((unsigned)n)]].mount = 1;
	}
}

static struct ent *lookup(const char *name)
{
	char *end;
	unsigned long i;

	if ((name[0] != 'd' && name[0] != 'f') || !name[1])
		return NULL;
	i = strtoul(name + 1, &end, 10);
	if (*end || i >= (unsigned long)nents)
		return NULL;
	return &ents[i];
}

/* rm -r dfd/name, staying on dfd's file system. */
static void rm_tree(int dfd, const char *name)
{
	struct stat pst, st;
	struct dirent *de;
	DIR *d;
	int fd;

	if (fstat(dfd, &pst) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dfd, name, 0);
		return;
	}
	if (st.st_dev != pst.st_dev)
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rm_tree(dirfd(d), de->d_name);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Runs on workers too: only syscalls on paths of its own entry. */
static int fault(void *arg, int op, const char *name)
{
	struct ent *e = lookup(name);
	char moved[64], target[4400];

	(void)arg;
	if (!e || e->op != op)
		return 0;
	switch (e->act) {
	case A_FAULT:
		return e->err;
	case A_VANISH:
		rm_tree(base_fd, e->path);
		e->act = A_NONE;
		e->acted = 1;
		return 0;
	case A_SWAP:
		snprintf(moved, sizeof(moved), "moved%d", (int)(e - ents));
		snprintf(target, sizeof(target), "%s/%s", t_base, moved);
		if (renameat(base_fd, e->path, base_fd, moved) == 0)
			symlinkat(target, base_fd, e->path);
		e->act = A_NONE;
		e->acted = 1;
		return 0;
	default:
		return 0;
	}
}

/* The hooks' arg: t_nest_report and t_nest_leave take it as it is. */
struct run {
	struct t_nest nest;	/* first */
	int dfd;
	int cancel_at;		/* enter_dir cancels at this call (0: never) */
	int enters;
};

static int enter(void *arg, const char *rel, struct de_dirent *d, size_t n)
{
	struct run *run = arg;
	size_t i;

	t_nest_enter(arg, rel, d, n);
	if (++run->enters == run->cancel_at)
		return 1;
	for (i = 0; i < n; i++) {
		struct ent *e = lookup(d[i].name);

		if (e && e->keep)
			d[i].action = DE_A_KEEP;
	}
	return 0;
}

static enum de_action dispose(void *arg, int dirfd, const char *name,
			      const char *relpath, enum de_type type)
{
	struct ent *e = lookup(name);

	(void)arg; (void)relpath; (void)type;
	if (!e || !e->dispose)
		return DE_A_DELETE;
	if (e->dispose == 1)
		return DE_A_KEEP;
	/* "Moved to a backup": gone from the tree, as rsync's would be. */
	return unlinkat(dirfd, name, 0) == 0 ? DE_A_DONE : DE_A_KEEP;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n++;
	closedir(d);
	return n;
}

static int build(int dfd)
{
	int i, fd;

	if (mkdirat(dfd, "tree", 0755))
		return -1;
	for (i = 0; i < nents; i++) {
		struct ent *e = &ents[i];

		if (e->isdir ? mkdirat(dfd, e->path, 0755) :
		    (fd = openat(dfd, e->path, O_WRONLY | O_CREAT | O_CLOEXEC,
				 0644)) < 0 || close(fd))
			return -1;
		if (e->mount) {
			fd = t_tmpfs(e->path);
			if (fd < 0) {
				e->mount = 0;
				continue;
			}
			if (t_file(fd, "inmount"))
				return -1;
			close(fd);
		}
	}
	return 0;
}

/* The index of the entry reported as path, -2 for the target, -3 if
 * none. */
static int ent_of(const char *path)
{
	int i;

	if (!strcmp(path, "tree"))
		return -2;
	for (i = 0; i < nents; i++)
		if (!strcmp(ents[i].path, path))
			return i;
	return -3;
}

/* Did the engine empty directory i (or the target, -1)?  Then it was
 * entered, and every entry in it must have been reported. */
static int emptied(int tree_res, int tree_op, int i)
{
	int res = i < 0 ? tree_res : ents[i].res;
	int op = i < 0 ? tree_op : ents[i].rop;

	if (i >= 0 && !ents[i].nrep)
		return 0;
	return res == DE_R_REMOVED || res == DE_R_NOT_EMPTY ||
	       (res == DE_R_FAILED && op == DE_OP_RMDIR);
}

static int check(struct run *run, int rc, const struct de_summary *sum,
		 int dry, const char *mode)
{
	uint64_t total;
	size_t k;
	int i, tree_res = -1, tree_op = 0, tree_at = -1;

	if (run->nest.depth || run->nest.bad) {
		fprintf(stderr, "%s: enter/leave do not nest\n", mode);
		return 1;
	}
	if (run->cancel_at && run->enters >= run->cancel_at) {
		/* Reports stop at the cancel: only the return value and
		 * that each entry is reported at most once are known. */
		if (rc != -ECANCELED) {
			fprintf(stderr, "%s: cancelled, returned %d\n", mode,
				rc);
			return 1;
		}
		for (k = 0; k < run->nest.rs.n; k++)
			for (i = 0; (size_t)i < k; i++)
				if (!strcmp(run->nest.rs.v[i].path,
					    run->nest.rs.v[k].path)) {
					fprintf(stderr, "%s: %s reported "
						"twice\n", mode,
						run->nest.rs.v[k].path);
					return 1;
				}
		return 0;
	}
	for (k = 0; k < run->nest.rs.n; k++) {
		const struct t_rep *r = &run->nest.rs.v[k];

		i = ent_of(r->path);
		if (i == -3) {
			fprintf(stderr, "%s: report of unknown %s\n", mode,
				r->path);
			return 1;
		}
		if (i == -2) {
			if (tree_at >= 0) {
				fprintf(stderr, "%s: tree reported twice\n",
					mode);
				return 1;
			}
			tree_res = r->result;
			tree_op = r->op;
			tree_at = (int)k;
			continue;
		}
		if (ents[i].nrep++) {
			fprintf(stderr, "%s: %s reported twice\n", mode,
				r->path);
			return 1;
		}
		ents[i].res = r->result;
		ents[i].rop = r->op;
		ents[i].seen_at = (int)k;
	}
	if (tree_at < 0) {
		fprintf(stderr, "%s: the target is not reported\n", mode);
		return 1;
	}
	for (i = 0; i < nents; i++) {
		struct ent *e = &ents[i];
		int p = e->parent;
		int p_at = p < 0 ? tree_at : ents[p].seen_at;

		if (e->nrep && (p >= 0 && !ents[p].nrep)) {
			fprintf(stderr, "%s: %s reported, its directory not\n",
				mode, e->path);
			return 1;
		}
		if (e->nrep && e->seen_at > p_at) {
			fprintf(stderr, "%s: %s reported after its directory\n",
				mode, e->path);
			return 1;
		}
		/* Below a directory "another process" removed or moved,
		 * entries may be gone before the engine lists them (the
		 * portable readdir() even takes a removed directory for an
		 * empty one). */
		if (!e->nrep && emptied(tree_res, tree_op, p) &&
		    !(p >= 0 && ents[p].acted)) {
			fprintf(stderr, "%s: %s never reported (directory %s)\n",
				mode, e->path, de_result_name(p < 0 ? tree_res :
							       ents[p].res));
			return 1;
		}
		if (!e->nrep || dry)
			continue;
		if (e->res == DE_R_REMOVED && t_exists(run->dfd, e->path)) {
			fprintf(stderr, "%s: %s reported removed, exists\n",
				mode, e->path);
			return 1;
		}
		if ((e->res == DE_R_NOT_EMPTY || e->res == DE_R_KEPT ||
		     e->res == DE_R_MOUNT) && !t_exists(run->dfd, e->path)) {
			fprintf(stderr, "%s: %s reported %s, is gone\n", mode,
				e->path, de_result_name(e->res));
			return 1;
		}
	}
	total = sum->removed_total + sum->failed + sum->not_empty +
		sum->skipped + sum->mounts + sum->kept + sum->vanished;
	if (total != run->nest.rs.n) {
		fprintf(stderr, "%s: %zu reports, summary counts %llu\n", mode,
			run->nest.rs.n, (unsigned long long)total);
		return 1;
	}
	if (sum->skipped ? rc != -EDQUOT :
	    sum->failed ? rc != -EIO : rc != 0) {
		fprintf(stderr, "%s: returned %d with %llu failed, %llu "
			"skipped\n", mode, rc,
			(unsigned long long)sum->failed,
			(unsigned long long)sum->skipped);
		return 1;
	}
	return 0;
}

static int one(int dfd, unsigned seed, int can_mount)
{
	static const char *modes[] = { "enter_dir", "enter_dir+max_delete",
				       "enter_dir+dry_run", "enter_dir+dispose",
				       "ordered", "unordered" };
	struct de_config cfg = { .max_delete = -1 };
	struct de_hooks h = { 0 };
	struct de_target t = { "tree", DE_T_UNKNOWN, 0 };
	struct de_summary sum;
	struct run run;
	de_ctx *ctx = NULL;
	int ret = 1, rc, mode, fds, i;
	char label[128];

	rng = seed * 2654435761u + 1;
	nents = 0;
	gen(-1, 0);
	plan(can_mount);
	mode = (int)rnd(6);
	cfg.threads = 1 + rnd(3);
	if (rnd(2))
		cfg.flags |= DE_F_MAKE_WRITABLE;
	snprintf(label, sizeof(label), "seed %u %s threads=%u", seed,
		 modes[mode], cfg.threads);
	memset(&run, 0, sizeof(run));
	run.dfd = dfd;
	h.arg = &run;
	h.report = t_nest_report;
	if (mode <= 3) {
		h.enter_dir = enter;
		h.leave_dir = t_nest_leave;
	}
	if (mode <= 3 && rnd(5) == 0)
		run.cancel_at = 1 + (int)rnd(6);
	if (mode == 1)
		cfg.max_delete = rnd(2) ? 1000 : (long long)rnd((unsigned)nents + 1);
	if (mode == 2)
		cfg.flags |= DE_F_DRY_RUN;
	if (mode == 3)
		h.dispose = dispose;
	if (mode == 4)
		cfg.flags |= DE_F_ORDERED;
	if (build(dfd)) {
		fprintf(stderr, "%s: cannot build the tree\n", label);
		goto out;
	}
	fds = count_fds();
	if (de_test_ctx_new(&ctx, &cfg, fault, NULL))
		goto out;
	alarm(RUN_ALARM);
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	alarm(0);
	de_ctx_free(ctx);
	ctx = NULL;
	if (count_fds() != fds) {
		fprintf(stderr, "%s: %d fds open before, %d after\n", label,
			fds, count_fds());
		goto out;
	}
	ret = check(&run, rc, &sum, mode == 2, label);
	if (ret && getenv("FUZZ_DEBUG")) {
		size_t k;

		for (i = 0; i < nents; i++)
			fprintf(stderr, "  %s act=%d op=%d err=%d keep=%d "
				"dispose=%d mount=%d\n", ents[i].path,
				ents[i].act, ents[i].op, ents[i].err,
				ents[i].keep, ents[i].dispose, ents[i].mount);
		for (k = 0; k < run.nest.rs.n; k++)
			fprintf(stderr, "  report %s %s op=%d err=%d\n",
				run.nest.rs.v[k].path,
				de_result_name(run.nest.rs.v[k].result),
				run.nest.rs.v[k].op, run.nest.rs.v[k].err);
	}
	if (ret == 0)
		for (i = 0; i < nents; i++)
			if (ents[i].mount && ents[i].nrep &&
			    ents[i].res != DE_R_MOUNT &&
			    ents[i].res != DE_R_KEPT) {
				fprintf(stderr, "%s: mount point %s reported "
					"%s\n", label, ents[i].path,
					de_result_name(ents[i].res));
				ret = 1;
			}
out:
	de_ctx_free(ctx);
	t_reps_free(&run.nest.rs);
	t_umount(-1);
	rm_tree(dfd, "tree");
	for (i = 0; i < nents; i++) {
		char moved[64];

		snprintf(moved, sizeof(moved), "moved%d", i);
		rm_tree(dfd, moved);
	}
	if (ret)
		fprintf(stderr, "failed: %s\n", label);
	return ret;
}

int test(int dfd)
{
	int ret = T_FAIL, can_mount;
	time_t t0 = time(NULL);
	unsigned seed;

	t_fail_on_alarm("hook_final_fuzz");
	base_fd = dfd;
	can_mount = geteuid() == 0;
	for (seed = 1; seed <= SEEDS; seed++) {
		CHECK(one(dfd, seed, can_mount) == 0);
		if (time(NULL) - t0 >= DEADLINE) {
			fprintf(stderr, "deadline: %u seeds run\n", seed);
			break;
		}
	}
	ret = T_PASS;
out:
	return ret;
}

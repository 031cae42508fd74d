/* chain_ahead: with the phase-2 gate forced on (DE_F_P2_GATE), the worker
 * that reads a chain scans each next directory itself, up to ahead_max
 * directories ahead of the unlinker (sched.c run_phase2).  A chain whose
 * every 25th level also holds a short side chain (so a reader that runs
 * ahead queues the other children and may meet the ordered window) is
 * removed completely and counted exactly, with 2 and 3 threads,
 * unordered and ordered (reports in canonical order), and under
 * RLIMIT_NOFILE 40, where the fd budget caps the run-ahead at a few
 * directories.
 *
 * That the reader did run ahead is checked, not assumed: the fault hook
 * slows every file unlink (so the unlinker is the slower of the two),
 * counts the chain's directory opens and file unlinks, and keeps the
 * largest lead, in directories, of the reader over the unlinker.
 * Without the run-ahead it stays under 10; ahead_max (at most 32) bounds
 * it from above, loosely (see MAX_LEAD).  Each run is made with
 * and without the side chains.  Under RLIMIT_NOFILE 40, where the budget
 * leaves ahead_max at 1-2, the lead is printed, not checked. */
#include "tutil.h"

#include <sys/resource.h>

#define LEVELS 600
#define FILES 4
#define SIDE_EVERY 25
#define SIDE_LEN 3
/* The unlinker's extra time per file: enough that a reader keeps ahead
 * even under ASan and TSan. */
#define UNLINK_DELAY_NS 200000L
/* Leads the runs must show with the fds unlimited (ahead_max 32): at
 * least MIN_LEAD, and at most MAX_LEAD, which says the run-ahead is
 * bounded (an unbounded reader leads by hundreds of the LEVELS), not how
 * tightly: the probe counts the unlinker's progress in whole directories
 * from a shared file count, so scheduling slack shows as extra lead.
 * Measured: 28-35, and 41 once under ASan; with the run-ahead turned off,
 * 7-8 unordered and 1 ordered.  (Before the probe's files went to the
 * front of the queue, global.c hand_over, they filled it to the gate and
 * unordered runs led by 7-9 only.) */
#define MIN_LEAD 16
#define MAX_LEAD (2 * 32)
/* The lead is a timing: a run starved of CPU (make check runs two test
 * builds at once on two cores) can lead by 8-9 once.  Such a run is
 * measured again, up to LEAD_TRIES in all; without the run-ahead every
 * try is short, so the check still fails. */
#define LEAD_TRIES 3
#define LEAD_OFF 1

/* What the fault hook saw of one run. */
struct probe {
	atomic_long opens;	/* chain directories ("dd") opened */
	atomic_long unlinks;	/* files unlinked */
	atomic_long lead;	/* largest opens - unlinks / FILES */
};

static int probe_fault(void *arg, int op, const char *name)
{
	struct probe *p = arg;
	struct timespec ts = { 0, UNLINK_DELAY_NS };
	long opens, done, lead, max;

	if (op == DE_OP_UNLINK && name[0] == 'f') {
		nanosleep(&ts, NULL);
		atomic_fetch_add(&p->unlinks, 1);
	} else if (op == DE_OP_OPEN && !strcmp(name, "dd")) {
		opens = atomic_fetch_add(&p->opens, 1) + 1;
		/* Side chains' files count as the chain's: they can only
		 * make the lead look shorter. */
		done = atomic_load(&p->unlinks) / FILES;
		lead = opens - done;
		max = atomic_load(&p->lead);
		while (lead > max &&
		       !atomic_compare_exchange_weak(&p->lead, &max, lead))
			;
	}
	return 0;
}

/* At every SIDE_EVERY-th level of the chain, a side chain of SIDE_LEN
 * directories "side", "side/s", ...; *sides counts them. */
static int side(int fd, int level, void *sides)
{
	if (level % SIDE_EVERY)
		return 0;
	++*(int *)sides;
	return t_chain(fd, "side", "s", SIDE_LEN - 1, "f%d", FILES, NULL,
		       NULL);
}

/* The tree; returns the number of directories made (with "tree") and
 * sets *files, or -1. */
static int build(int dfd, int *files, int with_sides)
{
	int sides = 0, dirs;

	dirs = t_chain(dfd, "tree", "dd", LEVELS, "f%d", FILES,
		       with_sides ? side : NULL, &sides);
	/* The deepest directory of each chain holds no files. */
	*files = (dirs - 1 - sides) * FILES;
	return dirs;
}

/* One removal of a fresh tree (with side chains or not) under an
 * RLIMIT_NOFILE soft limit of nofile (0: unchanged); returns 0, LEAD_OFF
 * when only the lead was out of range, or -1 (after a message). */
static int one(int dfd, unsigned threads, int ordered, rlim_t nofile,
	       int sides)
{
	struct rlimit rl, old;
	struct de_config cfg = { .threads = threads, .flags = DE_F_P2_GATE,
				 .max_delete = -1 };
	struct de_target t = { "tree", DE_T_DIR, 0 };
	struct t_names ref = { 0 };
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct de_hooks h;
	struct probe pr = { 0 };
	de_ctx *ctx = NULL;
	int dirs, files, rc, ret = -1, lowered = 0;
	long lead;
	size_t i;

	dirs = build(dfd, &files, sides);
	if (dirs < 0)
		goto out;
	if (ordered) {
		cfg.flags |= DE_F_ORDERED;
		/* t_canon holds one fd per level. */
		t_canon(dfd, "tree", "tree", &ref);
	}
	if (nofile) {
		if (getrlimit(RLIMIT_NOFILE, &old))
			goto out;
		rl = old;
		rl.rlim_cur = nofile;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			goto out;
		lowered = 1;
	}
	memset(&h, 0, sizeof(h));
	h.arg = &rs;
	h.report = t_collect;
	if (de_test_ctx_new(&ctx, &cfg, probe_fault, &pr))
		goto out;
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, &sum);
	if (rc || t_exists(dfd, "tree") ||
	    sum.removed[DE_T_DIR] != (uint64_t)dirs ||
	    sum.removed[DE_T_FILE] != (uint64_t)files ||
	    sum.failed || sum.not_empty ||
	    rs.n != (size_t)(dirs + files) ||
	    strcmp(rs.v[rs.n - 1].path, "tree")) {
		fprintf(stderr, "threads %u ordered %d: rc %d, dirs %llu/%d, "
			"files %llu/%d, reports %zu\n", threads, ordered, rc,
			(unsigned long long)sum.removed[DE_T_DIR], dirs,
			(unsigned long long)sum.removed[DE_T_FILE], files,
			rs.n);
		goto out;
	}
	for (i = 0; ordered && i < rs.n; i++) {
		if (i >= ref.n || strcmp(rs.v[i].path, ref.v[i])) {
			fprintf(stderr, "threads %u: report %zu is %s, "
				"want %s\n", threads, i, rs.v[i].path,
				i < ref.n ? ref.v[i] : "(none)");
			goto out;
		}
	}
	lead = atomic_load(&pr.lead);
	printf("threads %u ordered %d nofile %lu sides %d: lead %ld\n",
	       threads, ordered, (unsigned long)nofile, sides, lead);
	if (!nofile && (lead < MIN_LEAD || lead > MAX_LEAD)) {
		fprintf(stderr, "threads %u ordered %d: the reader led the "
			"unlinker by %ld directories at most, want %d-%d\n",
			threads, ordered, lead, MIN_LEAD, MAX_LEAD);
		ret = LEAD_OFF;
		goto out;
	}
	ret = 0;
out:
	if (lowered)
		(void)setrlimit(RLIMIT_NOFILE, &old);
	if (ctx)
		de_ctx_free(ctx);
	t_reps_free(&rs);
	t_names_free(&ref);
	return ret;
}

int test(int dfd)
{
	static const unsigned threads[] = { 2, 3 };
	int ret = T_FAIL, ti, ordered, sides, tries, rc;

	for (ti = 0; ti < 2; ti++)
		for (ordered = 0; ordered < 2; ordered++)
			for (sides = 1; sides >= 0; sides--) {
				tries = 0;
				do
					rc = one(dfd, threads[ti], ordered, 0,
						 sides);
				while (rc == LEAD_OFF && ++tries < LEAD_TRIES);
				CHECK(rc == 0);
			}
	for (ordered = 0; ordered < 2; ordered++)
		CHECK(one(dfd, 2, ordered, 40, 1) == 0);
	ret = T_PASS;
out:
	return ret;
}

/* report_enomem: an entry whose report cannot be built for want of memory
 * still counts in the summary, and a failed one still fails the run
 * (issue 21: report_ent() and report_self() returned before counting when
 * the path buffer could not grow, so de_remove() returned 0 with a file
 * left).  The test is linked with -Wl,--wrap=realloc; once the unlink of
 * "victim" has failed (fault hook, EACCES), every realloc() of the path
 * buffer's first size fails.  The targets are files of the start
 * directory, so nothing is listed (no other realloc()) after that. */
#include "tutil.h"

#include <stdatomic.h>

void *__real_realloc(void *p, size_t size);

static atomic_int armed, refused;

void *__wrap_realloc(void *p, size_t size)
{
	/* node.c de__node_path(): the path buffer starts at 4096 bytes. */
	if (atomic_load(&armed) && size == 4096) {
		atomic_fetch_add(&refused, 1);
		return NULL;
	}
	return __real_realloc(p, size);
}

static int hook(void *arg, int op, const char *name)
{
	(void)arg;
	if (op == DE_OP_UNLINK && !strcmp(name, "victim")) {
		atomic_store(&armed, 1);
		return EACCES;
	}
	return 0;
}

int test(int dfd)
{
	static const char *names[] = { "a", "b", "c", "victim" };
	struct de_config cfg = { .threads = 1, .max_delete = -1,
				 .flags = DE_F_ORDERED };
	struct de_target t[4];
	struct t_reps rs = { 0 };
	struct de_hooks h = { 0 };
	struct de_summary sum;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, rc, i;

	for (i = 0; i < 4; i++) {
		CHECK(t_file(dfd, names[i]) == 0);
		t[i].name = names[i];
		t[i].type = DE_T_FILE;
		t[i].ino = 0;
	}
	h.arg = &rs;
	h.report = t_collect;
	CHECK(de_test_ctx_new(&ctx, &cfg, hook, NULL) == 0);
	rc = de_remove(ctx, dfd, t, 4, &h, NULL, &sum);
	fprintf(stderr, "rc %d, removed %llu, failed %llu, %d reallocs refused, "
		"%zu reports\n", rc, (unsigned long long)sum.removed_total,
		(unsigned long long)sum.failed, atomic_load(&refused), rs.n);
	/* Else the injection missed, and this proves nothing. */
	CHECK(atomic_load(&refused) > 0);
	CHECK(rc == -EIO);
	CHECK(sum.failed == 1 && sum.removed_total == 3);
	CHECK(t_exists(dfd, "victim") && !t_exists(dfd, "a") &&
	      !t_exists(dfd, "c"));
	ret = T_PASS;
out:
	atomic_store(&armed, 0);
	de_ctx_free(ctx);
	return ret;
}

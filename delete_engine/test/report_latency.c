/* report_latency: in unordered mode the calling thread is woken for a
 * batch of events, not for each one, but a report never waits for the
 * batch longer than progress_ms.  One worker stalls 800 ms in an unlink
 * (fault hook) in directory b while the other empties directory a; a's
 * reports must arrive well before the stall ends, and every entry must
 * still be reported once. */
#include "tutil.h"

#include <pthread.h>
#include <time.h>

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct st {
	uint64_t t0, a_first;	/* when the first report under a came */
	int n;
};

static int slow(void *arg, int op, const char *name)
{
	(void)arg;
	if (op == DE_OP_UNLINK && !strcmp(name, "slow"))
		usleep(800 * 1000);
	return 0;
}

static void on_report(void *arg, const struct de_report *r)
{
	struct st *s = arg;

	s->n++;
	if (!s->a_first && !strncmp(r->path, "t/a/", 4))
		s->a_first = now_ms();
}

int test(int dfd)
{
	struct de_config cfg = { .threads = 2, .flags = DE_F_NO_P2_GATE,
				 .max_delete = -1, .progress_ms = 100 };
	struct de_target t = { "t", DE_T_UNKNOWN, 0 };
	struct st s = { 0 };
	struct de_hooks h;
	de_ctx *ctx = NULL;
	int ret = T_FAIL, fd, fd2, rc;
	uint64_t t1;

	fd = t_dir(dfd, "t");
	CHECK(fd >= 0);
	fd2 = t_dir(fd, "a");
	CHECK(fd2 >= 0);
	CHECK(t_files(fd2, "f%d", 5) == 0);
	close(fd2);
	fd2 = t_dir(fd, "b");
	CHECK(fd2 >= 0);
	CHECK(t_file(fd2, "slow") == 0);
	close(fd2);
	close(fd);

	memset(&h, 0, sizeof(h));
	h.arg = &s;
	h.report = on_report;
	CHECK(de_test_ctx_new(&ctx, &cfg, slow, NULL) == 0);
	s.t0 = now_ms();
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, NULL);
	t1 = now_ms();
	CHECK(rc == 0);
	CHECK(!t_exists(dfd, "t"));
	CHECK(s.n == 9);		/* t, a, b, 5 files, slow */
	CHECK(t1 - s.t0 >= 800);
	CHECK(s.a_first != 0);
	if (s.a_first - s.t0 > 500) {
		fprintf(stderr, "a's first report after %llu ms\n",
			(unsigned long long)(s.a_first - s.t0));
		goto out;
	}
	ret = T_PASS;
out:
	if (ctx)
		de_ctx_free(ctx);
	return ret;
}

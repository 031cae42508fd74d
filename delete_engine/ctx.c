/*
 * ctx.c - the context: configuration, lazily started pool, messages.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

uint64_t de__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The fds the process has open, below limit: /proc/self/fd's entries
 * (less the one reading it), else one fcntl() each. */
static long open_fds(long limit)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0, fd;

	if (d) {
		while (readdir(d))
			n++;
		closedir(d);
		return n > 3 ? n - 3 : 0;	/* ".", ".." and d's own */
	}
	for (fd = 0; fd < limit; fd++)
		n += fcntl((int)fd, F_GETFD) >= 0;
	return n;
}

/*
 * The fd budget of a context: half of the fds RLIMIT_NOFILE leaves free
 * when its workers start, after DE__FD_RESERVE more for the caller's
 * hooks, at most DE__FD_BUDGET_MAX and at least 1.  The budget is a
 * target, not a promise: de__open_dir() closes held fds and waits when
 * the process runs out (EMFILE).
 */
int de__fd_budget(void)
{
	struct rlimit rl;
	long b = DE__FD_BUDGET_MAX;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)(2 * DE__FD_BUDGET_MAX + 1024)) {
		long lim = (long)rl.rlim_cur;

		b = (lim - open_fds(lim) - DE__FD_RESERVE) / 2;
	}
	if (b > DE__FD_BUDGET_MAX)
		b = DE__FD_BUDGET_MAX;
	if (b < 1)
		b = 1;
	return (int)b;
}

/* See delete_engine.h. */
long de_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < DE_FD_LIMIT_WANT) {
		rlim_t want = DE_FD_LIMIT_WANT;

		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
			want = rl.rlim_max;
		if (want > rl.rlim_cur) {
			rl.rlim_cur = want;
			if (setrlimit(RLIMIT_NOFILE, &rl))
				return -errno;
		}
	}
	return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : (long)rl.rlim_cur;
}

/* See delete_engine.h.  Returns 0, -EINVAL or -ENOMEM. */
int de_ctx_new(de_ctx **out, const struct de_config *cfg)
{
	de_ctx *ctx;
	long ncpu;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (cfg && (cfg->threads > 1024 || cfg->schedule > DE_SCHED_GLOBAL))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	if (cfg)
		ctx->cfg = *cfg;
	else
		ctx->cfg.max_delete = -1;
	if (!ctx->cfg.progress_ms)
		ctx->cfg.progress_ms = DE__PROGRESS_MS;
	ctx->shed_fd = de__shed_fd;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > DE__CPUS_MAX)
		ncpu = DE__CPUS_MAX;
	ctx->nthreads = ctx->cfg.threads ? ctx->cfg.threads : (unsigned)ncpu;
	ctx->caller_buf = malloc(DE__BUFSZ);
	if (!ctx->caller_buf) {
		free(ctx);
		return -ENOMEM;
	}
	if (de__pace_init(ctx)) {
		free(ctx->caller_buf);
		free(ctx);
		return -ENOMEM;
	}
	pthread_mutex_init(&ctx->mu, NULL);
	pthread_cond_init(&ctx->cv, NULL);
	ctx->pid = getpid();
	*out = ctx;
	return 0;
}

/*
 * A worker could not be started: the process is at a memory (ulimit -v)
 * or process limit, and the run's own listings would hit it next (issue
 * 22: --delete-threads=1024 under ulimit -v 1000000 started 55 workers,
 * left the run 8 MB, and its reads failed with ENOMEM).  Halve the
 * workers until a reserve for the run can be mapped, down to none.  The
 * reserve is 64 MiB per worker that may allocate, and one more: on
 * 64-bit glibc each thread that mallocs may get an arena of its own,
 * which reserves 64 MiB of address space (at most 8 arenas per CPU), so
 * with 56 workers left under that ulimit the arenas took what their
 * shed stacks had freed, and reads still failed.
 */
static void shed_workers(de_ctx *ctx)
{
	const size_t arena = (size_t)64 << 20;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned arenas_max = ncpu > 0 ? (unsigned)ncpu * 8 : 8;
	unsigned n = ctx->pool.nthreads / 2;

	for (;;) {
		size_t size = ((size_t)(n < arenas_max ? n : arenas_max) + 1) * arena;
		void *p;

		de__pool_shrink(&ctx->pool, n);
		p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			munmap(p, size);
			return;
		}
		if (!n)
			return;
		n /= 2;
	}
}

/*
 * Start the workers on first use (so a context made before fork() and
 * never used costs no threads).  When one cannot be started, fewer
 * (shed_workers()), down to none, where the calling thread does all the
 * work (emit.c de__sleep_locked()).  Returns 0 or a negative errno.
 */
int de__ctx_start(de_ctx *ctx)
{
	unsigned i;
	int rc;

	if (ctx->pool_ready)
		return 0;
	/* Room for a latency-bound run's workers (de__ctx_grow()) unless
	 * the caller set the number. */
	rc = de__pool_init(&ctx->pool, ctx->cfg.threads ||
			   ctx->nthreads > DE__LAT_THREADS ?
			   ctx->nthreads : DE__LAT_THREADS);
	if (rc)
		return rc;
	for (i = 0; i < ctx->nthreads; i++) {
		rc = de__fault(ctx, DE_OP_THREAD, "");
		rc = rc ? -rc : de__pool_add(&ctx->pool);
		if (rc) {
			shed_workers(ctx);
			break;
		}
	}
	ctx->pool_ready = 1;
	/* Once per context, not per run: rsync calls de_remove() once per
	 * directory of a sync, and counting fds may cost one fcntl() each.
	 * The caller's fds are about what they will be on later runs; when
	 * they grow, de__open_dir() copes with EMFILE. */
	ctx->fd_budget = de__fd_budget();
	return 0;
}

/* See delete_engine_test.h. */
int de_test_ctx_new(de_ctx **out, const struct de_config *cfg,
		    de_fault_fn fn, void *arg)
{
	int rc = de_ctx_new(out, cfg);

	if (rc == 0) {
		(*out)->fault = fn;
		(*out)->fault_arg = arg;
	}
	return rc;
}

/* See delete_engine_test.h. */
void de_test_global_window(de_ctx *ctx, size_t ents, size_t blocks)
{
	ctx->global_ents = ents;
	ctx->global_blocks = blocks;
}

/* See delete_engine_test.h. */
void de_test_global_fill(de_ctx *ctx, int fill)
{
	ctx->global_fill = fill;
}

/*
 * Grow the pool to n workers (at most its slots) for a run that wants
 * more than the CPUs: a latency-bound file system (policy.c
 * threads_for()).  One that cannot be started is done without, as in
 * de__ctx_start().  Called between runs, with nothing queued.  Returns
 * the number of workers.
 */
unsigned de__ctx_grow(de_ctx *ctx, unsigned n)
{
	int rc;

	if (n > ctx->pool.max)
		n = ctx->pool.max;
	while (ctx->pool.nthreads < n) {
		rc = de__fault(ctx, DE_OP_THREAD, "");
		rc = rc ? -rc : de__pool_add(&ctx->pool);
		if (rc) {
			shed_workers(ctx);
			break;
		}
	}
	return ctx->pool.nthreads;
}

void de_ctx_free(de_ctx *ctx)
{
	if (!ctx)
		return;
	/* In a forked child the threads do not exist: just free memory. */
	if (ctx->pool_ready && getpid() == ctx->pid)
		de__pool_destroy(&ctx->pool);
	pthread_mutex_destroy(&ctx->mu);
	pthread_cond_destroy(&ctx->cv);
	de__pace_destroy(ctx);
	free(ctx->caller_buf);
	free(ctx->pbuf);
	free(ctx);
}

const char *de_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err == 0)
		return "Success";
	/* strerror() is not thread-safe in theory; strerrordesc_np is. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	{
		const char *s = strerrordesc_np(err);

		if (s)
			return s;
	}
	return "Unknown error";
#else
	return strerror(err);
#endif
}

const char *de_op_name(enum de_op op)
{
	switch (op) {
	case DE_OP_NONE: return "none";
	case DE_OP_OPEN: return "open";
	case DE_OP_READ: return "read";
	case DE_OP_STAT: return "stat";
	case DE_OP_UNLINK: return "unlink";
	case DE_OP_RMDIR: return "rmdir";
	case DE_OP_CHMOD: return "chmod";
	}
	if ((int)op == DE_OP_TOUCH)
		return "touch";
	return (int)op == DE_OP_THREAD ? "thread" : "?";
}

const char *de_result_name(enum de_result r)
{
	switch (r) {
	case DE_R_REMOVED: return "removed";
	case DE_R_FAILED: return "failed";
	case DE_R_NOT_EMPTY: return "not-empty";
	case DE_R_SKIPPED: return "skipped";
	case DE_R_MOUNT: return "mount-point";
	case DE_R_OTHER_FS: return "other-fs";
	case DE_R_KEPT: return "kept";
	case DE_R_DONE: return "done";
	case DE_R_VANISHED: return "vanished";
	}
	return "?";
}

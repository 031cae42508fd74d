/*
 * fusemodel: what the FUSE models under bench/ share (fusemodel.h says
 * what a model gives it).  The command line is the model's options,
 * --help, then the first operand, which is the model's, then the mount
 * point and FUSE's own options, passed to fuse_main() as they are.  The
 * counters file is served here, never from the page cache, and costs
 * the model nothing: reading it is not a request of the model's.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fusemodel.h"

/*
 * fuse_main()'s arguments: argv[0], the file system's name, the model's
 * own and at most 23 of the caller's (the operands are checked against
 * that), and the NULL.
 */
static char *fargv[32];
static int fargc;

void fm_usage(int rc)
{
	fputs(model_usage, rc ? stderr : stdout);
	exit(rc);
}

double fm_number(const char *opt, const char *arg, double min)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || !(v >= min) || !isfinite(v)) {
		fprintf(stderr, "%s: bad value for --%s: '%s'\n", model_name, opt, arg);
		exit(2);
	}
	return v;
}

void fm_fuse_arg(char *arg)
{
	fargv[fargc++] = arg;
	fargv[fargc] = NULL;
}

void fm_line(struct fm_text *t, const char *name, const char *fmt, ...)
{
	char value[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof value, fmt, ap);
	va_end(ap);
	if (t->len < sizeof t->buf)
		t->len += (size_t)snprintf(t->buf + t->len, sizeof t->buf - t->len,
					   "%s %s\n", name, value);
	if (t->len >= sizeof t->buf)	/* cut short: what fits */
		t->len = sizeof t->buf - 1;
}

void fm_report(struct fm_text *t)
{
	t->len = 0;
	t->buf[0] = '\0';
	model_report(t);
}

uint64_t fm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fm_sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int is_counters(const char *path)
{
	return strcmp(path, model_counters) == 0;
}

static int counters_open(const char *path, struct fuse_file_info *fi)
{
	if (!is_counters(path))
		return model_ops.open(path, fi);
	/* Every read reaches us, and no descriptor of the model's is named. */
	fi->direct_io = 1;
	fi->fh = (uint64_t)-1;
	return 0;
}

static int counters_read(const char *path, char *buf, size_t size, off_t off,
			 struct fuse_file_info *fi)
{
	struct fm_text t;

	if (!is_counters(path))
		return model_ops.read(path, buf, size, off, fi);
	fm_report(&t);
	if (off >= (off_t)t.len)
		return 0;
	if (size > t.len - (size_t)off)
		size = t.len - (size_t)off;
	memcpy(buf, t.buf + off, size);
	return (int)size;
}

static int counters_write(const char *path, const char *buf, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	if (!is_counters(path))
		return model_ops.write(path, buf, size, off, fi);
	model_reset();
	return (int)size;
}

static int counters_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (!is_counters(path))
		return model_ops.truncate(path, size, fi);
	return 0;	/* "echo > FILE" opens it O_TRUNC */
}

static int counters_release(const char *path, struct fuse_file_info *fi)
{
	if (!is_counters(path))
		return model_ops.release(path, fi);
	return 0;
}

int main(int argc, char **argv)
{
	static struct fuse_operations ops;
	static char fsname[64];
	struct option lo[32];	/* the model's, at most 30, and --help */
	int opt, n = 0, i, rc;

	while (model_options[n].name && n < 30) {
		lo[n] = model_options[n];
		n++;
	}
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };

	/* "+": stop at the first operand; what follows it is FUSE's. */
	while ((opt = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		if (opt == 'h')
			fm_usage(0);
		if (opt == '?' || model_option(opt, optarg))
			fm_usage(2);
	}
	if (argc - optind < 2 || argc - optind > 24)
		fm_usage(2);
	snprintf(fsname, sizeof fsname, "fsname=%s,subtype=%s", model_name, model_name);
	fm_fuse_arg(argv[0]);
	fm_fuse_arg("-o");
	fm_fuse_arg(fsname);
	rc = model_start(argv[optind]);
	if (rc)
		return rc;
	for (i = optind + 1; i < argc; i++)
		fm_fuse_arg(argv[i]);

	ops = model_ops;
	ops.open = counters_open;
	ops.read = counters_read;
	ops.write = counters_write;
	ops.truncate = counters_truncate;
	if (ops.release)	/* none: libfuse's answer, 0, as here */
		ops.release = counters_release;
	return fuse_main(fargc, fargv, &ops, NULL);
}

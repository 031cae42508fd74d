/*
 * fusemodel: the skeleton of the FUSE models under bench/ (netfs, a
 * network file system's latency, and slowdisk, a disk's).  A model is a
 * service-time rule and its file operations; the skeleton gives it the
 * rest: its command line, its start under fuse_main(), a clock to sleep
 * on, and its counters file, which reads as "name value" lines and sets
 * them to zero when written to.
 */
#ifndef FUSEMODEL_H
#define FUSEMODEL_H

#define FUSE_USE_VERSION 31

#include <fuse.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* The counters file's text, as model_report() writes it. */
struct fm_text {
	char buf[512];
	size_t len;
};

/*
 * What a model defines.  The skeleton's main() parses the command line
 * with them, starts the model and serves its operations until unmounted.
 */
extern const char model_name[];		/* in messages, fsname and subtype */
extern const char model_usage[];	/* what --help prints, and a bad call */
extern const struct option model_options[];	/* --help is the skeleton's */
extern const char model_counters[];	/* the counters file's path: "/stats" */
/*
 * Its file operations.  The skeleton answers open, read, write, truncate
 * and release of the counters file, and passes the rest on: the model
 * must have the first four.  getattr stays the model's, whose namespace
 * the counters file is in.
 */
extern const struct fuse_operations model_ops;

/* One of model_options: 0, or -1 for a bad one (the usage, exit 2). */
int model_option(int opt, const char *arg);
/*
 * The options parsed: set up on the first operand (SOURCE, IMAGE) and
 * add FUSE arguments of its own (fm_fuse_arg()).  Returns 0, or the exit
 * status.
 */
int model_start(const char *operand);
/* The counters file's text, a fm_line() a counter, and what writing to
 * it does. */
void model_report(struct fm_text *t);
void model_reset(void);

/* What the skeleton gives a model. */

/* model_usage, on stdout for 0 and stderr otherwise; exits rc. */
void fm_usage(int rc) __attribute__((noreturn));

/* An option's number, at least min; a bad one is a message and exit 2. */
double fm_number(const char *opt, const char *arg, double min);

/* One more argument for fuse_main(), from model_start(). */
void fm_fuse_arg(char *arg);

/* A line "name value" of the counters file. */
void fm_line(struct fm_text *t, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The counters file's text as it reads now. */
void fm_report(struct fm_text *t);

/* The clock the models' time is sleeps on: CLOCK_MONOTONIC, in ns. */
uint64_t fm_now_ns(void);
void fm_sleep_until(uint64_t ns);

#endif

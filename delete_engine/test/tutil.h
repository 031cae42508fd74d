/*
 * tutil.h - helpers shared by the engine tests (defined in tutil.c).
 * Exit codes: 0 pass, 1 fail, 77 skip.
 */
#ifndef DE_TUTIL_H
#define DE_TUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "delete_engine_test.h"

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
		#cond); goto out; } } while (0)

extern char t_base[4096];

/* Make a fresh temp dir; returns an O_DIRECTORY fd or -1. */
int t_mktemp(void);

/* Remove the temp dir (rm copes with any depth and any mode). */
void t_cleanup(void);

/*
 * Make the temp dir and run fn there as nobody (uid and gid 65534, in a
 * child, with the dir handed to nobody) when root, else as ourselves, so
 * that permission checks apply; then remove the dir.  Returns fn's
 * T_PASS/T_FAIL, or T_SKIP when nobody cannot be had.
 */
int t_as_nobody(int (*fn)(void));

/*
 * As root, make a loop image of the given size (truncate's syntax) in the
 * temp dir, format it with mkfs (a command that takes the image's path
 * last, e.g. "mkfs.ext4 -q") and mount it on <temp>/mnt.  Returns an
 * O_DIRECTORY fd of the mount, or -1 when that cannot be done here (not
 * root, no such mkfs): the caller skips.  t_loop_umount() undoes it.
 */
extern char t_mnt[sizeof(t_base) + 8];

int t_loop_mount(const char *size, const char *mkfs);

/* Close fd (if >= 0) and unmount what t_loop_mount() mounted, if any. */
void t_loop_umount(int fd);

/* rm -rf base/name (to reset between sub-cases). */
void t_cleanup_sub(int dfd, const char *name);

int t_file(int dfd, const char *name);

/* mkdir name in dfd and return an fd for it, or -1. */
int t_dir(int dfd, const char *name);

/* Count entries below dfd/name (name included), without following links. */
long t_count(int dfd, const char *name);

int t_exists(int dfd, const char *path);

/* Collected reports. */
struct t_rep {
	char *path;
	int type, result, op, err;
};

struct t_reps {
	struct t_rep *v;
	size_t n, cap;
};

void t_collect(void *arg, const struct de_report *r);

void t_reps_free(struct t_reps *rs);

struct t_rep *t_find(struct t_reps *rs, const char *path);

/* Run the engine on one target; returns de_remove's value. */
int t_remove(int dfd, const char *name, unsigned threads, unsigned flags,
	     long long maxdel, struct t_reps *rs, struct de_summary *sum);

/*
 * Reference canonical order of dfd/name (post-order; reverse rsync sort
 * inside each directory), appended as paths to out.
 */
struct t_names {
	char **v;
	size_t n, cap;
};

void t_names_add(struct t_names *ns, const char *s);

void t_names_free(struct t_names *ns);

struct t_de {
	char name[256];
	int isdir;
};

int t_cmp_desc(const void *a, const void *b);

void t_canon(int dfd, const char *name, const char *path, struct t_names *out);

/* A tree mixing files, dirs, links and byte-order traps, fanout^depth. */
int t_mixed(int dfd, const char *name, int depth, int fanout);

/* n empty files in fd, named by fmt (a printf format of the index 0..n-1).
 * Returns 0 or -1. */
int t_files(int fd, const char *fmt, int n);

#endif

/*
 * rsync-rm - remove files and directory trees with rsync-de's deletion
 * engine, taking what GNU rm takes from scripts: backup tools that expire
 * a hard-linked snapshot with "rm -rf" (rsnapshot's cmd_rm) get the
 * engine by naming this command instead.
 *
 *   rsync-rm [-f] [-r|-R] [-v] [--one-file-system] [--polite] [--] FILE...
 *
 * Messages, verbose lines and the exit status are GNU rm's (0 when every
 * FILE is gone, 1 otherwise), under this program's name.  Where it
 * differs, it is safer: it never follows a symlink, not even one named
 * with a trailing slash, and never crosses a mount point, a bind mount of
 * the same file system included (rsync-rm.1).
 *
 * Built with -DDE_RM_MEASURE it is delete_engine/tools/de-rm, the same
 * program with the engine's measuring switches (threads, order, split,
 * dry run) for benchmarks and tests; those never reach the user's
 * command.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef DE_RM_MEASURE
#include "delete_engine_test.h"
#define PROG "de-rm"
#else
#include "delete_engine.h"
#define PROG "rsync-rm"
#endif

#ifndef RSYNC_RM_VERSION
#define RSYNC_RM_VERSION "unknown"
#endif

/* What one operand's removal prints through the report hook. */
struct out {
	const char *operand;	/* as typed: names the target itself */
	const char *top;	/* the operand without trailing slashes */
	size_t toplen;		/* the target's name's length in r->path */
	int verbose, dry;
	int failed;
};

/*
 * Print operand-relative PATH (the engine's report path, which starts
 * with the target's name) as rm names it: the target as typed, anything
 * inside it below the operand without its trailing slashes.
 */
static void name(const struct out *o, const char *path)
{
	if (!path[o->toplen])
		fputs(o->operand, stdout);
	else
		printf("%s%s", o->top, path + o->toplen);
}

static void ename(const struct out *o, const char *path)
{
	if (!path[o->toplen])
		fputs(o->operand, stderr);
	else
		fprintf(stderr, "%s%s", o->top, path + o->toplen);
}

static void report(void *arg, const struct de_report *r)
{
	struct out *o = arg;

	switch (r->result) {
	case DE_R_FAILED:
		o->failed = 1;
		fflush(stdout);
		fprintf(stderr, PROG ": cannot remove '");
		ename(o, r->path);
		fprintf(stderr, "': %s\n", de_strerror(r->err));
		break;
	case DE_R_MOUNT:
	case DE_R_OTHER_FS:
		/* GNU rm's words for --one-file-system; a mount point is
		 * kept with or without it, a bind mount too. */
		o->failed = 1;
		fflush(stdout);
		fprintf(stderr, PROG ": skipping '");
		ename(o, r->path);
		fprintf(stderr, r->result == DE_R_OTHER_FS ? "', since it's on a "
			"different device\n" : "', since it's a mount point\n");
		break;
	case DE_R_REMOVED:
		if (!o->verbose && !o->dry)
			break;
		fputs(o->dry ? "would remove '" : r->type == DE_T_DIR ?
		      "removed directory '" : "removed '", stdout);
		name(o, r->path);
		fputs("'\n", stdout);
		break;
	default:
		/* Not empty: a failure inside already said why, as rm does.
		 * Vanished: gone, which is what was asked. */
		break;
	}
}

static void try_help(void)
{
	fprintf(stderr, "Try '" PROG " --help' for more information.\n");
	exit(1);
}

static void help(void)
{
	printf("Usage: " PROG " [OPTION]... [FILE]...\n"
	       "Remove (unlink) the FILE(s) with rsync-de's deletion engine.\n"
	       "\n"
	       "  -f, --force           ignore nonexistent files and arguments\n"
	       "  -r, -R, --recursive   remove directories and their contents recursively\n"
	       "  -v, --verbose         explain what is being done\n"
	       "      --one-file-system  when removing a hierarchy recursively, skip any\n"
	       "                          directory that is on a file system different from\n"
	       "                          that of the corresponding command line argument\n"
	       "      --preserve-root   do not remove '/' (the default, and the only choice)\n"
	       "      --polite          yield the disk to other processes' I/O, as rsync's\n"
	       "                          --delete-polite (or set RSYNC_RM_POLITE=1)\n"
#ifdef DE_RM_MEASURE
	       "  -j N                  worker threads\n"
	       "  -n                    dry run: print what would be removed\n"
	       "  -o                    reports in rsync's canonical order\n"
	       "  -w                    make own unwritable directories writable first\n"
	       "  -S, -A, -a, -i, -I    the engine's measuring switches (tools/README)\n"
	       "  -G, -D                the global schedule (one inode order per window),\n"
	       "                          or directory by directory (default: auto)\n"
	       "  -W N                  global windows of at most N directory blocks\n"
	       "  --rate=N, --burst=N   removals a second, in bursts of N\n"
#endif
	       "      --help            display this help and exit\n"
	       "      --version         output version information and exit\n"
	       "\n"
	       "Unlike GNU rm, " PROG " never prompts (-i, -I and --interactive are\n"
	       "refused), never follows a symlink, not even one named with a trailing\n"
	       "slash, and never crosses a mount point.  See " PROG "(1).\n");
	exit(0);
}

enum { OPT_ONE_FS = 256, OPT_PRESERVE_ROOT, OPT_NO_PRESERVE_ROOT, OPT_POLITE,
       OPT_INTERACTIVE, OPT_HELP, OPT_VERSION, OPT_RATE, OPT_BURST };

static const struct option longopts[] = {
	{ "force", no_argument, NULL, 'f' },
	{ "recursive", no_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "one-file-system", no_argument, NULL, OPT_ONE_FS },
	{ "preserve-root", optional_argument, NULL, OPT_PRESERVE_ROOT },
	{ "no-preserve-root", no_argument, NULL, OPT_NO_PRESERVE_ROOT },
	{ "polite", no_argument, NULL, OPT_POLITE },
	{ "interactive", optional_argument, NULL, OPT_INTERACTIVE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
#ifdef DE_RM_MEASURE
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "burst", required_argument, NULL, OPT_BURST },
#endif
	{ NULL, 0, NULL, 0 }
};

#ifdef DE_RM_MEASURE
#define SHORTOPTS "frRvj:noxwSAaiIGDW:"
#else
#define SHORTOPTS "frRviI"
#endif

/* Is the last component of path "." or ".."? */
static int dot_or_dotdot(const char *path)
{
	size_t len = strlen(path);
	const char *base;

	while (len > 1 && path[len - 1] == '/')
		len--;
	base = path + len;
	while (base > path && base[-1] != '/')
		base--;
	len -= (size_t)(base - path);
	return (len == 1 && base[0] == '.') ||
	       (len == 2 && base[0] == '.' && base[1] == '.');
}

/*
 * Remove one operand.  Returns 0 when it is gone (or, with -f, was never
 * there), 1 otherwise, having said why.
 */
static int remove_one(de_ctx *ctx, const char *operand, int recursive,
		      int force, struct out *o)
{
	struct de_hooks h;
	struct de_target t;
	struct stat st, root;
	char *top, *dir, *base;
	size_t len;
	int dfd, rc, ret = 1;

	if (dot_or_dotdot(operand)) {
		fprintf(stderr, PROG ": refusing to remove '.' or '..' directory: "
			"skipping '%s'\n", operand);
		return 1;
	}
	if (!(top = strdup(operand)))
		goto nomem;
	len = strlen(top);
	while (len > 1 && top[len - 1] == '/')
		top[--len] = '\0';
	if (lstat(top, &st) < 0) {
		if (errno == ENOENT && force) {
			free(top);
			return 0;
		}
		fprintf(stderr, PROG ": cannot remove '%s': %s\n", operand,
			de_strerror(errno));
		free(top);
		return 1;
	}
	if (recursive && stat("/", &root) == 0 &&
	    st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
		fprintf(stderr, PROG ": it is dangerous to operate recursively on '%s'\n"
			PROG ": use --no-preserve-root to override this failsafe\n",
			operand);
		free(top);
		return 1;
	}
	/* "link/" names the directory a symlink points to, and GNU rm
	 * empties that directory.  Nothing here follows a symlink. */
	if (S_ISLNK(st.st_mode) && strlen(operand) > len) {
		fprintf(stderr, PROG ": cannot remove '%s': Not a directory "
			"(a symlink: name it without the trailing slash to "
			"remove the link)\n", operand);
		free(top);
		return 1;
	}
	if (S_ISDIR(st.st_mode) && !recursive) {
		fprintf(stderr, PROG ": cannot remove '%s': Is a directory\n",
			operand);
		free(top);
		return 1;
	}
	base = strrchr(top, '/');
	if (base) {
		dir = strndup(top, (size_t)(base - top + 1));
		base++;
	} else {
		dir = strdup("");
		base = top;
	}
	if (!dir)
		goto nomem;
	dfd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, PROG ": cannot remove '%s': %s\n", operand,
			de_strerror(errno));
		free(dir);
		free(top);
		return 1;
	}
	o->operand = operand;
	o->top = top;
	o->toplen = strlen(base);
	o->failed = 0;
	memset(&h, 0, sizeof h);
	h.arg = o;
	h.report = report;
	/* Quiet: only failures are reported. */
	if (!o->verbose && !o->dry)
		h.skip_results = (1u << DE_R_REMOVED) | (1u << DE_R_VANISHED) |
				 (1u << DE_R_NOT_EMPTY);
	t.name = base;
	t.type = de_type_of_mode(st.st_mode);
	t.ino = st.st_ino;
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, NULL);
	if (rc && rc != -EIO && rc != -EDQUOT) {
		fflush(stdout);
		fprintf(stderr, PROG ": cannot remove '%s': %s\n", operand,
			de_strerror(rc));
	} else if (!o->failed) {
		ret = 0;
	}
	close(dfd);
	free(dir);
	free(top);
	return ret;
nomem:
	fprintf(stderr, PROG ": %s\n", de_strerror(ENOMEM));
	exit(1);
}

int main(int argc, char **argv)
{
	struct de_config cfg = { .max_delete = -1 };
	struct out o = { 0 };
	const char *env = getenv("RSYNC_RM_POLITE");
	int recursive = 0, force = 0, polite = env && *env && strcmp(env, "0");
#ifdef DE_RM_MEASURE
	size_t win_blocks = 0;
#endif
	de_ctx *ctx;
	int c, i, rc, status = 0;

	opterr = 0;	/* its messages name argv[0]; rm's name the program */
	while ((c = getopt_long(argc, argv, SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'f': force = 1; break;
		case 'r': case 'R': recursive = 1; break;
		case 'v': o.verbose = 1; break;
		case OPT_ONE_FS: cfg.flags |= DE_F_ONE_FILE_SYSTEM; break;
		case OPT_PRESERVE_ROOT: break;
		case OPT_POLITE: polite = 1; break;
		case OPT_HELP: help(); break;
		case OPT_VERSION:
			printf(PROG " (rsync-de) %s\n", RSYNC_RM_VERSION);
			return 0;
		case OPT_NO_PRESERVE_ROOT:
			fprintf(stderr, PROG ": --no-preserve-root is not supported\n");
			try_help();
			break;
#ifdef DE_RM_MEASURE
		case 'j': cfg.threads = (unsigned)atoi(optarg); break;
		case 'n': cfg.flags |= DE_F_DRY_RUN; o.dry = 1; break;
		case 'o': cfg.flags |= DE_F_ORDERED; break;
		case 'x': cfg.flags |= DE_F_ONE_FILE_SYSTEM; break;
		case 'w': cfg.flags |= DE_F_MAKE_WRITABLE; break;
		case 'S': cfg.flags |= DE_F_NO_SPLIT; break;
		case 'A': cfg.flags |= DE_F_NO_ADAPT; break;
		case 'a': cfg.flags |= DE_F_ADAPT; break;
		case 'i': cfg.flags |= DE_F_NO_INODE_SORT; break;
		case 'I': cfg.flags |= DE_F_INODE_SORT; break;
		case 'G': cfg.schedule = DE_SCHED_GLOBAL; break;
		case 'D': cfg.schedule = DE_SCHED_DIRS; break;
		case 'W': win_blocks = (size_t)atol(optarg); break;
		case OPT_RATE: cfg.rate = (unsigned)atoi(optarg); break;
		case OPT_BURST: cfg.rate_burst = (unsigned)atoi(optarg); break;
#else
		case 'i': case 'I': case OPT_INTERACTIVE:
			fprintf(stderr, PROG ": prompting is not supported "
				"(-i, -I, --interactive): " PROG " removes what "
				"it is given, as rm -f does\n");
			try_help();
			break;
#endif
		default:
			if (optopt && c == '?')
				fprintf(stderr, PROG ": invalid option -- '%c'\n", optopt);
			else if (c == ':' || optopt)
				fprintf(stderr, PROG ": option requires an argument -- '%c'\n", optopt);
			else
				fprintf(stderr, PROG ": unrecognized option '%s'\n", argv[optind - 1]);
			try_help();
		}
	}
	if (optind >= argc) {
		if (force)
			return 0;
		fprintf(stderr, PROG ": missing operand\n");
		try_help();
	}
	if (polite) {
		de_config_polite(&cfg, cfg.rate);
		(void)de_polite_io();
	}
	rc = de_ctx_new(&ctx, &cfg);
	if (rc) {
		fprintf(stderr, PROG ": %s\n", de_strerror(rc));
		return 1;
	}
#ifdef DE_RM_MEASURE
	de_test_global_window(ctx, 0, win_blocks);
#endif
	for (i = optind; i < argc; i++)
		status |= remove_one(ctx, argv[i], recursive, force, &o);
	de_ctx_free(ctx);
	fflush(stdout);
	return ferror(stdout) ? 1 : status;
}

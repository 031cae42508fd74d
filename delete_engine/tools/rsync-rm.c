/*
 * rsync-rm - remove files and directory trees with rsync-de's deletion
 * engine, taking what GNU rm takes: backup tools that expire a
 * hard-linked snapshot with "rm -rf" (rsnapshot's cmd_rm) get the engine
 * by naming this command instead.
 *
 *   rsync-rm [OPTION]... [FILE]...
 *
 * The options, prompts, messages, quoting, -v lines and exit status are
 * GNU rm's (coreutils 9.1, remove.c and rm.c), under the name the
 * program was invoked by, and coreutils' own tests/rm pass with it in
 * place of src/rm (make check-coreutils-rm).  Where it differs, it is
 * safer: it never follows a symlink, not even one named with a trailing
 * slash, and never crosses a mount point, a bind mount of the same file
 * system included (rsync-rm.1).
 *
 * Prompts (-i, or a write-protected entry with standard input on a
 * terminal) are asked on the calling thread before each removal, through
 * the engine's dispose and ask_dir hooks; such a run is serial.  Every
 * other run is the engine's fast one.
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
#include <inttypes.h>
#include <limits.h>
#include <langinfo.h>
#include <locale.h>
#include <dirent.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

#ifdef DE_RM_MEASURE
#include "delete_engine_test.h"
#else
#include "delete_engine.h"
#endif

#ifndef RSYNC_RM_VERSION
#define RSYNC_RM_VERSION "unknown"
#endif

/* Open a parent only to name entries in it: no read permission needed,
 * as GNU rm unlinks "p/f" without reading p (tests/rm/no-give-up.sh). */
#ifdef O_PATH
#define PARENT_OPEN (O_PATH | O_DIRECTORY | O_CLOEXEC)
#else
#define PARENT_OPEN (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#endif

/* The program's name in its messages: argv[0], as GNU's programs have it,
 * so that an rsync-rm installed or linked as rm says "rm:". */
static const char *prog = "rsync-rm";

enum interactive { RMI_NEVER, RMI_SOMETIMES, RMI_ALWAYS };

/* rm's options (coreutils' struct rm_options), read once. */
struct rm_opts {
	enum interactive interactive;
	int ignore_missing;	/* -f */
	int recursive;		/* -r */
	int remove_empty_dirs;	/* -d */
	int verbose, dry;
	int stdin_tty;		/* or ---presume-input-tty */
	int one_fs;
	int preserve_root, preserve_all_root;
	int explain;		/* de-rm --explain */
};

/* One operand's removal, as the hooks see it. */
struct out {
	const struct rm_opts *x;
	const char *shown;	/* the operand as rm names it: its trailing
				 * slashes made one */
	size_t showntop;	/* its length without that slash */
	size_t toplen;		/* the target's name's length in the engine's
				 * report paths */
	char *buf;		/* a path to show, grown as needed */
	size_t bufsz;
	int failed;
};

/*
 * Write s to f quoted as GNU's quoteaf() does (shell-escape-always
 * style): in single quotes, a quote as '\'', anything not printable in
 * the locale as $'\n' or $'\ooo' outside them.  Names go to terminals and
 * to scripts that read the lines back, so a newline in a name must not
 * end the line.
 */
static void quote(FILE *f, const char *s)
{
	static const char esc[] = "\a\b\f\n\r\t\v";
	static const char letter[] = "abfnrtv";
	mbstate_t mb;
	int in_dollar = 0;

	memset(&mb, 0, sizeof mb);
	putc('\'', f);
	while (*s) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, MB_CUR_MAX, &mb);
		int printable = n != (size_t)-1 && n != (size_t)-2 && n > 0 &&
				iswprint((wint_t)wc);

		if (printable) {
			if (in_dollar) {
				fputs("''", f);
				in_dollar = 0;
			}
			if (*s == '\'')
				fputs("'\\''", f);
			else
				fwrite(s, 1, n, f);
			s += n;
			continue;
		}
		memset(&mb, 0, sizeof mb);
		if (!in_dollar) {
			fputs("'$'", f);
			in_dollar = 1;
		}
		if (strchr(esc, *s))
			fprintf(f, "\\%c", letter[strchr(esc, *s) - esc]);
		else
			fprintf(f, "\\%03o", (unsigned char)*s);
		s++;
	}
	putc('\'', f);
}

/* The engine's report path (which starts with the target's name) as rm
 * shows it: the operand's trailing slashes made one for the target
 * itself, the operand without them below it (fts's fts_path). */
static const char *shown(struct out *o, const char *path)
{
	size_t need;

	if (!path[o->toplen])
		return o->shown;
	need = o->showntop + strlen(path + o->toplen) + 1;
	if (need > o->bufsz) {
		char *b = realloc(o->buf, need);

		if (!b)
			return path;
		o->buf = b;
		o->bufsz = need;
	}
	memcpy(o->buf, o->shown, o->showntop);
	strcpy(o->buf + o->showntop, path + o->toplen);
	return o->buf;
}

/* "PROG: FORMAT QUOTED[: strerror]" on stderr, as GNU's error() with one
 * quoted name. */
static void say(const char *fmt_head, const char *name, const char *tail,
		int err)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s", prog, fmt_head);
	quote(stderr, name);
	if (tail)
		fputs(tail, stderr);
	if (err)
		fprintf(stderr, ": %s", de_strerror(err));
	putc('\n', stderr);
}

/* remove.c's nonexistent_file_errno(): what -f says nothing of. */
static int ignorable(const struct rm_opts *x, int err)
{
	return x->ignore_missing && (err == ENOENT || err == ENOTDIR ||
				     err == EINVAL || err == EILSEQ);
}

static void report(void *arg, const struct de_report *r)
{
	struct out *o = arg;

	switch (r->result) {
	case DE_R_FAILED:
		if (ignorable(o->x, r->err))
			break;
		o->failed = 1;
		say("cannot remove ", shown(o, r->path), NULL, r->err);
		break;
	case DE_R_MOUNT:
	case DE_R_OTHER_FS:
		/* GNU rm's words for --one-file-system; a mount point is
		 * kept with or without it, a bind mount too. */
		o->failed = 1;
		say("skipping ", shown(o, r->path), r->result == DE_R_OTHER_FS ?
		    ", since it's on a different device" :
		    ", since it's a mount point", 0);
		break;
	case DE_R_REMOVED:
		if (!o->x->verbose && !o->x->dry)
			break;
		fputs(o->x->dry ? "would remove " : r->type == DE_T_DIR ?
		      "removed directory " : "removed ", stdout);
		quote(stdout, shown(o, r->path));
		putc('\n', stdout);
		break;
	default:
		/* Not empty: a failure inside already said why, as rm does.
		 * Kept: the user said no.  Vanished: gone, as asked. */
		break;
	}
}

/* rm's yesno(): one line of standard input; yes if it reads as yes in
 * the locale (rpmatch), no at its end. */
static int yesno(void)
{
	char *line = NULL;
	size_t sz = 0;
	ssize_t n = getline(&line, &sz, stdin);
	int yes;

	if (n < 0) {
		free(line);
		return 0;
	}
	if (n > 0 && line[n - 1] == '\n')
		line[n - 1] = '\0';
	yes = rpmatch(line) > 0;
	free(line);
	return yes;
}

/* gnulib's file_type(): the words for st's type in a prompt. */
static const char *file_type(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return st->st_size == 0 ? "regular empty file" : "regular file";
	if (S_ISDIR(st->st_mode))
		return "directory";
	if (S_ISLNK(st->st_mode))
		return "symbolic link";
	if (S_ISBLK(st->st_mode))
		return "block special file";
	if (S_ISCHR(st->st_mode))
		return "character special file";
	if (S_ISFIFO(st->st_mode))
		return "fifo";
	if (S_ISSOCK(st->st_mode))
		return "socket";
	return "weird file";
}

/*
 * remove.c's write_protected_non_symlink(): 1 if name in dirfd is
 * write-protected, 0 if not (or a symlink, or we are root), -1 with errno
 * when that cannot be told.
 */
static int write_protected(int dirfd, const char *name, struct stat *st,
			   int *have_st)
{
	if (geteuid() == 0)
		return 0;
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW))
		return -1;
	*have_st = 1;
	if (S_ISLNK(st->st_mode))
		return 0;
	if (faccessat(dirfd, name, W_OK, AT_EACCESS) == 0)
		return 0;
	return errno == EACCES ? 1 : -1;
}

/*
 * remove.c's prompt(): ask about name in dirfd (shown as path) before it
 * is entered (descend, for a directory with entries) or removed.  Returns
 * 1 to go on, 0 to keep it: the user said no, or it failed and was
 * reported (*failed set).
 */
static int prompt(const struct rm_opts *x, int dirfd, const char *name,
		  const char *path, int is_dir, int descend, int *failed)
{
	struct stat st;
	int have_st = 0, wp = 0, wp_errno = 0;

	if (x->interactive == RMI_NEVER)
		return 1;
	if (!x->ignore_missing &&
	    (x->interactive == RMI_ALWAYS || x->stdin_tty)) {
		wp = write_protected(dirfd, name, &st, &have_st);
		wp_errno = errno;
	}
	if (!wp && x->interactive != RMI_ALWAYS)
		return 1;
	if (wp >= 0 && !have_st) {
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			have_st = 1;
		} else {
			wp = -1;
			wp_errno = errno;
		}
	}
	if (wp >= 0 && S_ISLNK(st.st_mode) && x->interactive != RMI_ALWAYS)
		return 1;
	if (wp >= 0 && is_dir && !x->recursive && !x->remove_empty_dirs) {
		wp = -1;
		wp_errno = EISDIR;
	}
	if (wp < 0) {
		say("cannot remove ", path, NULL, wp_errno);
		*failed = 1;
		return 0;
	}
	fprintf(stderr, "%s: ", prog);
	if (is_dir && descend)
		fputs(wp ? "descend into write-protected directory " :
		      "descend into directory ", stderr);
	else
		fprintf(stderr, wp ? "remove write-protected %s " :
			"remove %s ", file_type(&st));
	quote(stderr, path);
	fputs("? ", stderr);
	return yesno();
}

/* The engine's hooks for a run that may prompt. */
static enum de_action ask_file(void *arg, int dirfd, const char *name,
			       const char *relpath, enum de_type type)
{
	struct out *o = arg;

	(void)type;
	return prompt(o->x, dirfd, name, shown(o, relpath), 0, 0, &o->failed) ?
	       DE_A_DELETE : DE_A_KEEP;
}

static enum de_action ask_dir(void *arg, int dirfd, const char *name,
			      const char *relpath, int rmdir)
{
	struct out *o = arg;

	return prompt(o->x, dirfd, name, shown(o, relpath), 1, !rmdir,
		      &o->failed) ? DE_A_DELETE : DE_A_KEEP;
}

/* Whether a prompt may be asked at all: rm asks with -i, and of
 * write-protected entries when standard input is a terminal and -f was
 * not given (root writes everything, so it is never asked then). */
static int may_prompt(const struct rm_opts *x)
{
	return x->interactive == RMI_ALWAYS ||
	       (x->interactive != RMI_NEVER && x->stdin_tty &&
		!x->ignore_missing && geteuid() != 0);
}

/* remove.c's is_empty_dir(): 1 if name in dirfd is a directory we can
 * read and it has no entries, else 0. */
static int is_empty_dir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC | O_NONBLOCK);
	struct dirent *d;
	DIR *dp;
	int empty = 1;

	if (fd < 0)
		return 0;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return 0;
	}
	errno = 0;
	while ((d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..")) {
			empty = 0;
			break;
		}
	if (!d && errno)
		empty = 0;
	closedir(dp);
	return empty;
}

static void try_help(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
	exit(1);
}

/*
 * At exit: standard output that could not be written fails the run, as
 * GNU's close_stdout() has it (--help > /dev/full exits 1).  A closed
 * stdout (>&-) with nothing to write is no error.
 */
static void close_stdout(void)
{
	size_t pending = __fpending(stdout);
	int prev = ferror(stdout), fail = fclose(stdout) != 0;
	int err = fail ? errno : 0;

	if (prev || (fail && (pending || err != EBADF))) {
		if (err)
			fprintf(stderr, "%s: write error: %s\n", prog,
				de_strerror(err));
		else
			fprintf(stderr, "%s: write error\n", prog);
		_exit(1);
	}
}

static void help(void)
{
	printf("Usage: %s [OPTION]... [FILE]...\n", prog);
	fputs("Remove (unlink) the FILE(s) with rsync-de's deletion engine.\n"
	      "\n"
	      "  -f, --force           ignore nonexistent files and arguments, never prompt\n"
	      "  -i                    prompt before every removal\n"
	      "  -I                    prompt once before removing more than three files, or\n"
	      "                          when removing recursively; less intrusive than -i,\n"
	      "                          while still giving protection against most mistakes\n"
	      "      --interactive[=WHEN]  prompt according to WHEN: never, once (-I), or\n"
	      "                          always (-i); without WHEN, prompt always\n"
	      "      --one-file-system  when removing a hierarchy recursively, skip any\n"
	      "                          directory that is on a file system different from\n"
	      "                          that of the corresponding command line argument\n"
	      "      --no-preserve-root  do not treat '/' specially\n"
	      "      --preserve-root[=all]  do not remove '/' (default);\n"
	      "                              with 'all', reject any command line argument\n"
	      "                              on a separate device from its parent\n"
	      "  -r, -R, --recursive   remove directories and their contents recursively\n"
	      "  -d, --dir             remove empty directories\n"
	      "  -v, --verbose         explain what is being done\n"
	      "      --polite          yield the disk to other processes' I/O, as rsync's\n"
	      "                          --delete-polite (or set RSYNC_RM_POLITE=1)\n"
#ifdef DE_RM_MEASURE
	      "  -j N                  worker threads\n"
	      "  -n                    dry run: print what would be removed\n"
	      "  -o                    reports in rsync's canonical order\n"
	      "  -w                    make own unwritable directories writable first\n"
	      "  -S, -A, -a, -N, -O    measuring switches (delete_engine/README.md)\n"
	      "  -G, -D                the global schedule (one inode order per window),\n"
	      "                          or directory by directory (default: auto)\n"
	      "  -W N                  global windows of at most N directory blocks\n"
	      "                          (N/2 where their holes are filled)\n"
	      "  -H                    leave the holes of inode orders unfilled (a\n"
	      "                          global window's, a huge directory's runs)\n"
	      "  --rate=N, --burst=N   removals a second, in bursts of N\n"
	      "  --explain             print each operand's plan: the schedule\n"
	      "                          and why (de_explain())\n"
#endif
	      "      --help            display this help and exit\n"
	      "      --version         output version information and exit\n"
	      "\n"
	      "By default, rm does not remove directories.  Use the --recursive (-r or -R)\n"
	      "option to remove each listed directory, too, along with all of its contents.\n"
	      "\n"
	      "Unlike GNU rm, it never follows a symlink, not even one named with a\n"
	      "trailing slash, and never crosses a mount point, a bind mount included.\n", stdout);
	fputs("See rsync-rm(1).\n", stdout);
	exit(0);
}

enum { OPT_ONE_FS = 256, OPT_PRESERVE_ROOT, OPT_NO_PRESERVE_ROOT, OPT_POLITE,
       OPT_INTERACTIVE, OPT_PRESUME_TTY, OPT_HELP, OPT_VERSION, OPT_RATE,
       OPT_BURST, OPT_EXPLAIN };

static const struct option longopts[] = {
	{ "dir", no_argument, NULL, 'd' },
	{ "force", no_argument, NULL, 'f' },
	{ "interactive", optional_argument, NULL, OPT_INTERACTIVE },
	{ "one-file-system", no_argument, NULL, OPT_ONE_FS },
	{ "no-preserve-root", no_argument, NULL, OPT_NO_PRESERVE_ROOT },
	{ "preserve-root", optional_argument, NULL, OPT_PRESERVE_ROOT },
	/* Not in --help: coreutils' tests use it to stand for a terminal. */
	{ "-presume-input-tty", no_argument, NULL, OPT_PRESUME_TTY },
	{ "recursive", no_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "polite", no_argument, NULL, OPT_POLITE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
#ifdef DE_RM_MEASURE
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "burst", required_argument, NULL, OPT_BURST },
	{ "explain", no_argument, NULL, OPT_EXPLAIN },
#endif
	{ NULL, 0, NULL, 0 }
};

#ifdef DE_RM_MEASURE
#define SHORTOPTS "dfirvIRj:noxwSAaNOGDW:H"
#else
#define SHORTOPTS "dfirvIR"
#endif

/* gnulib's quote(): a word in the locale's quotation marks, which argmatch's
 * messages use: curly in a UTF-8 locale, else straight. */
static void locale_quote(FILE *f, const char *s)
{
	int utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");

	fprintf(f, utf8 ? "\xe2\x80\x98%s\xe2\x80\x99" : "'%s'", s);
}

/* rm's --interactive=WHEN, by argmatch (unambiguous prefixes too). */
static enum interactive interactive_arg(const char *arg)
{
	static const struct { const char *word; enum interactive v; } w[] = {
		{ "never", RMI_NEVER }, { "no", RMI_NEVER }, { "none", RMI_NEVER },
		{ "once", RMI_SOMETIMES },
		{ "always", RMI_ALWAYS }, { "yes", RMI_ALWAYS },
	};
	size_t i, len = strlen(arg);
	int found = -1, ambiguous = 0;

	for (i = 0; i < sizeof w / sizeof w[0]; i++) {
		if (strncmp(w[i].word, arg, len))
			continue;
		if (strlen(w[i].word) == len)
			return w[i].v;
		if (found >= 0 && w[found].v != w[i].v)
			ambiguous = 1;
		found = (int)i;
	}
	if (found >= 0 && !ambiguous)
		return w[found].v;
	fprintf(stderr, "%s: %s argument ", prog, ambiguous ? "ambiguous" :
		"invalid");
	locale_quote(stderr, arg);
	fputs(" for ", stderr);
	locale_quote(stderr, "--interactive");
	fputs("\nValid arguments are:", stderr);
	for (i = 0; i < sizeof w / sizeof w[0]; i++) {
		fputs(i && w[i].v == w[i - 1].v ? ", " : "\n  - ", stderr);
		locale_quote(stderr, w[i].word);
	}
	putc('\n', stderr);
	try_help();
	return RMI_NEVER;
}

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
 * --preserve-root=all: GNU's check, by "operand/..": a mount point or
 * another device's directory named directly is refused.  Returns 1
 * having said why, else 0.
 */
static int other_device(const char *operand, const char *shown_name,
			const struct stat *st)
{
	size_t len = strlen(operand);
	char *parent = malloc(len + 4);
	struct stat up;
	int failed = !parent;

	if (parent) {
		memcpy(parent, operand, len);
		strcpy(parent + len, len && operand[len - 1] == '/' ?
		       ".." : "/..");
		failed = lstat(parent, &up) != 0;
	}
	if (failed) {
		fflush(stdout);
		fprintf(stderr, "%s: failed to stat ", prog);
		quote(stderr, parent ? parent : "..");
		fputs(": skipping ", stderr);
		quote(stderr, operand);
		putc('\n', stderr);
	} else if (up.st_dev != st->st_dev) {
		say("skipping ", shown_name,
		    ", since it's on a different device", 0);
		fprintf(stderr, "%s: and --preserve-root=all is in "
			"effect\n", prog);
		failed = 1;
	}
	free(parent);
	return failed;
}

/*
 * A directory operand's checks before anything is removed, rm_fts()'s
 * for FTS_D at the root level.  Returns 0 to go on, 1 having said why not.
 */
static int dir_refused(const struct rm_opts *x, const char *operand,
		       const char *shown_name, const struct stat *st,
		       int parentfd, const char *base)
{
	struct stat root;

	if (!x->recursive &&
	    !(x->remove_empty_dirs && is_empty_dir(parentfd, base))) {
		say("cannot remove ", shown_name, NULL,
		    x->remove_empty_dirs ? ENOTEMPTY : EISDIR);
		return 1;
	}
	if (dot_or_dotdot(operand)) {
		fflush(stdout);
		fprintf(stderr, "%s: refusing to remove '.' or '..' directory: "
			"skipping ", prog);
		quote(stderr, shown_name);
		putc('\n', stderr);
		return 1;
	}
	if (x->recursive && x->preserve_root && stat("/", &root) == 0 &&
	    st->st_dev == root.st_dev && st->st_ino == root.st_ino) {
		fflush(stdout);
		fprintf(stderr, "%s: it is dangerous to operate recursively on ",
			prog);
		quote(stderr, shown_name);
		if (strcmp(shown_name, "/"))
			fputs(" (same as '/')", stderr);
		fprintf(stderr, "\n%s: use --no-preserve-root to override this "
			"failsafe\n", prog);
		return 1;
	}
	return x->preserve_all_root &&
	       other_device(operand, shown_name, st);
}

/* -d without -r: an empty directory operand, by one rmdir. */
static int remove_empty_dir(const struct rm_opts *x, int parentfd,
			    const char *base, const char *shown_name)
{
	int failed = 0;

	if (may_prompt(x) &&
	    !prompt(x, parentfd, base, shown_name, 1, 0, &failed))
		return failed;
	if (x->dry || unlinkat(parentfd, base, AT_REMOVEDIR) == 0) {
		if (x->verbose || x->dry) {
			fputs(x->dry ? "would remove " : "removed directory ",
			      stdout);
			quote(stdout, shown_name);
			putc('\n', stdout);
		}
		return 0;
	}
	if (ignorable(x, errno))
		return 0;
	say("cannot remove ", shown_name, NULL, errno);
	return 1;
}

/*
 * An operand with a trailing slash that is not a directory: a file, or a
 * symlink to one, is "Not a directory" (and kept), and "link/" names the
 * directory a symlink points to, which GNU rm empties.  Nothing here
 * follows a symlink.  Returns remove_one()'s value.
 */
static int slash_refused(const struct rm_opts *x, const char *operand,
			 const char *show)
{
	struct stat follow;
	int err = stat(operand, &follow) < 0 ? errno :
		  !S_ISDIR(follow.st_mode) ? ENOTDIR : 0;

	if (!err) {
		say("cannot remove ", show, " (a symlink to a directory:"
		    " name it without the trailing slash to remove the"
		    " link)", 0);
		return 1;
	}
	if (!ignorable(x, err)) {
		say("cannot remove ", show, NULL, err);
		return 1;
	}
	return 0;
}

/*
 * Open the directory that holds top (a path without trailing slashes),
 * to name entries in, and point *base at top's last name ("." for "/").
 * Returns the fd, or -1 with errno set.
 */
static int open_parent(char *top, char **base)
{
	char *dir, *b = strrchr(top, '/');
	int dfd, err;

	if (b && b != top) {
		dir = strndup(top, (size_t)(b - top));
		b++;
	} else if (b) {
		dir = strdup("/");
		b++;
	} else {
		dir = strdup(".");
		b = top;
	}
	if (!dir) {
		fprintf(stderr, "%s: %s\n", prog, de_strerror(ENOMEM));
		exit(1);
	}
	/* "/" itself, or a name of slashes. */
	*base = *b ? b : ".";
	dfd = open(dir, PARENT_OPEN);
	err = errno;
	free(dir);
	errno = err;
	return dfd;
}

/* The engine's removal of base, inside dfd, whose lstat is st, as the
 * operand o shows it.  Returns remove_one()'s value. */
static int engine_remove(de_ctx *ctx, struct out *o, int dfd,
			 const char *base, const struct stat *st)
{
	const struct rm_opts *x = o->x;
	struct de_hooks h;
	struct de_target t;
	int rc;

	o->toplen = strlen(base);
	memset(&h, 0, sizeof h);
	h.arg = o;
	h.report = report;
	if (may_prompt(x)) {
		h.dispose = ask_file;
		h.ask_dir = ask_dir;
	}
	/* Quiet: only failures are reported. */
	if (!x->verbose && !x->dry)
		h.skip_results = (1u << DE_R_REMOVED) | (1u << DE_R_VANISHED) |
				 (1u << DE_R_NOT_EMPTY) | (1u << DE_R_KEPT);
	t.name = base;
	t.type = de_type_of_mode(st->st_mode);
	t.ino = st->st_ino;
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, NULL);
#ifdef DE_RM_MEASURE
	if (x->explain) {
		char plan[256];

		if (de_explain(ctx, plan, sizeof(plan)) >= 0)
			fprintf(stderr, "%s: plan for %s: %s\n", prog,
				o->shown, plan);
	}
#endif
	if (rc && rc != -EIO && rc != -EDQUOT) {
		say("cannot remove ", o->shown, NULL, -rc);
		return 1;
	}
	return o->failed != 0;
}

/*
 * Remove one operand.  Returns 0 when it is gone (or, with -f, was never
 * there), 1 otherwise, having said why.
 */
static int remove_one(de_ctx *ctx, const char *operand,
		      const struct rm_opts *x)
{
	struct out o = { .x = x };
	struct stat st;
	char *top, *show, *base;
	size_t len, oplen = strlen(operand);
	int dfd = -1, ret = 1, slash;

	if (!(top = strdup(operand)) || !(show = malloc(oplen + 1))) {
		fprintf(stderr, "%s: %s\n", prog, de_strerror(ENOMEM));
		exit(1);
	}
	len = oplen;
	while (len > 1 && top[len - 1] == '/')
		top[--len] = '\0';
	/* "//" is "/", as fts has it. */
	slash = len < oplen && !(len == 1 && top[0] == '/');
	/* fts's name for it: the trailing slashes made one. */
	memcpy(show, top, len);
	strcpy(show + len, slash ? "/" : "");
	o.shown = show;
	o.showntop = len;
	if (lstat(top, &st) < 0) {
		if (!ignorable(x, errno))
			say("cannot remove ", show, NULL, errno);
		else
			ret = 0;
	} else if (slash && !S_ISDIR(st.st_mode)) {
		ret = slash_refused(x, operand, show);
	} else if ((dfd = open_parent(top, &base)) < 0) {
		say("cannot remove ", show, NULL, errno);
	} else if (S_ISDIR(st.st_mode) &&
		   dir_refused(x, operand, show, &st, dfd, base)) {
		/* said why */
	} else if (S_ISDIR(st.st_mode) && !x->recursive) {
		ret = remove_empty_dir(x, dfd, base, show);
	} else {
		ret = engine_remove(ctx, &o, dfd, base, &st);
	}
	if (dfd >= 0)
		close(dfd);
	free(o.buf);
	free(show);
	free(top);
	return ret;
}

/* rm.c's diagnose_leading_hyphen(): an unknown option that is a file. */
static void diagnose_leading_hyphen(int argc, char **argv)
{
	struct stat st;
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (arg[0] == '-' && arg[1] && lstat(arg, &st) == 0) {
			fprintf(stderr, "Try '%s ./%s' to remove the file ",
				prog, arg);
			quote(stderr, arg);
			fputs(".\n", stderr);
			break;
		}
	}
}

/* What the command line sets besides rm's own options (struct rm_opts). */
struct cmdline {
	struct de_config cfg;
	int polite;		/* --polite, RSYNC_RM_POLITE */
	int prompt_once;	/* -I, --interactive=once */
	size_t win_blocks;	/* de-rm -W */
	int fill;		/* de-rm -H: -1 */
};

/* de-rm's measuring switches: 1 if c is one (set in cl and x). */
static int measure_option(int c, struct cmdline *cl, struct rm_opts *x)
{
#ifdef DE_RM_MEASURE
	switch (c) {
	case 'j': cl->cfg.threads = (unsigned)atoi(optarg); return 1;
	case 'n': cl->cfg.flags |= DE_F_DRY_RUN; x->dry = 1; return 1;
	case 'o': cl->cfg.flags |= DE_F_ORDERED; return 1;
	case 'x': x->one_fs = 1; return 1;
	case 'w': cl->cfg.flags |= DE_F_MAKE_WRITABLE; return 1;
	case 'S': cl->cfg.flags |= DE_F_NO_SPLIT; return 1;
	case 'A': cl->cfg.flags |= DE_F_NO_P2_GATE; return 1;
	case 'a': cl->cfg.flags |= DE_F_P2_GATE; return 1;
	case 'N': cl->cfg.flags |= DE_F_NO_INODE_SORT; return 1;
	case 'O': cl->cfg.flags |= DE_F_INODE_SORT; return 1;
	case 'G': cl->cfg.schedule = DE_SCHED_GLOBAL; return 1;
	case 'D': cl->cfg.schedule = DE_SCHED_DIRS; return 1;
	case 'W': cl->win_blocks = (size_t)atol(optarg); return 1;
	case 'H': cl->fill = -1; return 1;
	case OPT_RATE: cl->cfg.rate = (unsigned)atoi(optarg); return 1;
	case OPT_BURST: cl->cfg.rate_burst = (unsigned)atoi(optarg); return 1;
	case OPT_EXPLAIN: x->explain = 1; return 1;
	}
#endif
	(void)c;
	(void)cl;
	(void)x;
	return 0;
}

/* --preserve-root[=all] and --no-preserve-root, which rm will not take
 * abbreviated. */
static void root_option(int c, char **argv, struct rm_opts *x)
{
	if (c == OPT_PRESERVE_ROOT) {
		if (optarg && strcmp(optarg, "all")) {
			fprintf(stderr, "%s: unrecognized --preserve-root "
				"argument: ", prog);
			quote(stderr, optarg);
			putc('\n', stderr);
			exit(1);
		}
		x->preserve_root = 1;
		x->preserve_all_root = optarg != NULL;
		return;
	}
	if (strcmp(argv[optind - 1], "--no-preserve-root")) {
		fprintf(stderr, "%s: you may not abbreviate the "
			"--no-preserve-root option\n", prog);
		exit(1);
	}
	x->preserve_root = 0;
}

/* Option c of getopt_long()'s, into cl and x; an unknown one ends the
 * run, as rm's do. */
static void rm_option(int c, int argc, char **argv, struct cmdline *cl,
		      struct rm_opts *x)
{
	switch (c) {
	case 'd': x->remove_empty_dirs = 1; break;
	case 'f':
		x->interactive = RMI_NEVER;
		x->ignore_missing = 1;
		cl->prompt_once = 0;
		break;
	case 'i':
		x->interactive = RMI_ALWAYS;
		x->ignore_missing = 0;
		cl->prompt_once = 0;
		break;
	case 'I':
		x->interactive = RMI_SOMETIMES;
		x->ignore_missing = 0;
		cl->prompt_once = 1;
		break;
	case 'r': case 'R': x->recursive = 1; break;
	case 'v': x->verbose = 1; break;
	case OPT_INTERACTIVE: {
		enum interactive w = optarg ? interactive_arg(optarg) :
			RMI_ALWAYS;

		cl->prompt_once = w == RMI_SOMETIMES;
		x->interactive = w;
		if (w != RMI_NEVER)
			x->ignore_missing = 0;
		break;
	}
	case OPT_ONE_FS: x->one_fs = 1; break;
	case OPT_PRESERVE_ROOT:
	case OPT_NO_PRESERVE_ROOT:
		root_option(c, argv, x);
		break;
	case OPT_PRESUME_TTY: x->stdin_tty = 1; break;
	case OPT_POLITE: cl->polite = 1; break;
	case OPT_HELP: help(); break;
	case OPT_VERSION:
		printf("rsync-rm (rsync-de) %s\n", RSYNC_RM_VERSION);
		exit(0);
	default:
		if (measure_option(c, cl, x))
			break;
		diagnose_leading_hyphen(argc, argv);
		try_help();
	}
}

int main(int argc, char **argv)
{
	struct cmdline cl = { .cfg = { .max_delete = -1 } };
	/* rm's defaults: ask only of write-protected entries, keep '/'. */
	struct rm_opts x = { .interactive = RMI_SOMETIMES, .preserve_root = 1 };
	const char *env = getenv("RSYNC_RM_POLITE");
	de_ctx *ctx;
	int c, i, rc, status = 0;
	uintmax_t n_files;

	if (argv[0] && *argv[0])
		prog = argv[0];
	setlocale(LC_ALL, "");
	atexit(close_stdout);
	x.stdin_tty = isatty(STDIN_FILENO);
	cl.polite = env && *env && strcmp(env, "0");
	/* getopt's messages name argv[0], as rm's do. */
	while ((c = getopt_long(argc, argv, SHORTOPTS, longopts, NULL)) != -1)
		rm_option(c, argc, argv, &cl, &x);
	if (optind >= argc) {
		if (x.ignore_missing)
			return 0;
		fprintf(stderr, "%s: missing operand\n", prog);
		try_help();
	}
	if (x.one_fs)
		cl.cfg.flags |= DE_F_ONE_FILE_SYSTEM | DE_F_TARGET_FS;
	n_files = (uintmax_t)(argc - optind);
	if (cl.prompt_once && (x.recursive || n_files > 3)) {
		fprintf(stderr, x.recursive ? "%s: remove %ju argument%s "
			"recursively? " : "%s: remove %ju argument%s? ", prog,
			n_files, n_files == 1 ? "" : "s");
		if (!yesno())
			return 0;
	}
	if (cl.polite) {
		de_config_polite(&cl.cfg, cl.cfg.rate);
		(void)de_polite_io();
	}
	/* A window of the global schedule holds an fd per directory: under
	 * a soft limit of 1,024, at most about 250 of its 2,048. */
	(void)de_raise_fd_limit();
	rc = de_ctx_new(&ctx, &cl.cfg);
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, de_strerror(rc));
		return 1;
	}
#ifdef DE_RM_MEASURE
	de_test_global_window(ctx, 0, cl.win_blocks);
	de_test_global_fill(ctx, cl.fill);
#endif
	for (i = optind; i < argc; i++)
		status |= remove_one(ctx, argv[i], &x);
	de_ctx_free(ctx);
	return status;
}

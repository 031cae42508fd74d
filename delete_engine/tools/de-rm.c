/*
 * de-rm - remove files and directory trees with the delete engine, like
 * "rm -rf", for trying and timing the engine.
 *
 *   de-rm [-j THREADS] [-n] [-v] [-o] [-x] [-w] PATH...
 *
 *   -j N  worker threads (default: online CPUs, adapted per file system)
 *   -n    dry run: remove nothing, print what would be removed
 *   -v    print each removal
 *   -o    ordered: reports in rsync's canonical deletion order
 *   -x    one file system: do not descend into other file systems
 *   -w    make own unwritable/unreadable directories writable first
 *   -S    never split a huge directory across workers (measuring)
 *   -A/-a every worker unlinks always / only one unless the tree is wide
 *         (measuring; default: per file system, see order.c; either one
 *         also keeps btrfs on the parallel schedule)
 *   -i/-I never/always unlink in inode order (measuring)
 *
 * Errors are printed like rm's ("de-rm: cannot remove 'X': Permission
 * denied"); the exit status is 1 if anything could not be removed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "delete_engine_test.h"

struct out {
	const char *prefix;	/* directory part of PATH with its '/', or "" */
	int verbose, dry;
	int failed;
};

static void show(const struct out *o, const char *what, const char *path)
{
	printf("%s '%s%s'\n", what, o->prefix, path);
}

static void report(void *arg, const struct de_report *r)
{
	struct out *o = arg;

	switch (r->result) {
	case DE_R_FAILED:
		o->failed = 1;
		fflush(stdout);
		fprintf(stderr, "de-rm: cannot remove '%s%s': %s\n",
			o->prefix, r->path, de_strerror(r->err));
		break;
	case DE_R_MOUNT:
	case DE_R_OTHER_FS:
		o->failed = 1;
		fprintf(stderr, "de-rm: skipping '%s%s', since it's on a "
			"different device\n", o->prefix, r->path);
		break;
	case DE_R_REMOVED:
		if (o->dry)
			show(o, "would remove", r->path);
		else if (o->verbose)
			show(o, r->type == DE_T_DIR ? "removed directory" :
			     "removed", r->path);
		break;
	default:
		break;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: de-rm [-j THREADS] [-n] [-v] [-o] [-x] [-w] [-S] [-A|-a] "
		"[-i|-I] "
		"[-r RATE [-R BURST]] [-P] PATH...\n"
		"-r: removals per second, -R: in bursts of BURST, "
		"-P: idle I/O class (as ionice -c3)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct de_config cfg = { .max_delete = -1 };
	struct de_hooks h;
	struct out o = { "", 0, 0, 0 };
	de_ctx *ctx;
	int c, i, rc, status = 0;

	while ((c = getopt(argc, argv, "j:nvoxwSAaiIhr:R:P")) != -1) {
		switch (c) {
		case 'j': cfg.threads = (unsigned)atoi(optarg); break;
		case 'n': cfg.flags |= DE_F_DRY_RUN; o.dry = 1; break;
		case 'v': o.verbose = 1; break;
		case 'o': cfg.flags |= DE_F_ORDERED; break;
		case 'x': cfg.flags |= DE_F_ONE_FILE_SYSTEM; break;
		case 'w': cfg.flags |= DE_F_MAKE_WRITABLE; break;
		case 'S': cfg.flags |= DE_F_NO_SPLIT; break;
		case 'A': cfg.flags |= DE_F_NO_ADAPT; break;
		case 'a': cfg.flags |= DE_F_ADAPT; break;
		case 'i': cfg.flags |= DE_F_NO_INODE_SORT; break;
		case 'I': cfg.flags |= DE_F_INODE_SORT; break;
		case 'r': cfg.rate = (unsigned)atoi(optarg); break;
		case 'R': cfg.rate_burst = (unsigned)atoi(optarg); break;
		case 'P':
#if defined __linux__ && defined SYS_ioprio_set
			/* IOPRIO_WHO_PROCESS, this process, class idle; the
			 * engine's threads, started later, inherit it. */
			if (syscall(SYS_ioprio_set, 1, 0, 3 << 13) < 0)
				perror("de-rm: ioprio_set");
#endif
			break;
		default: usage();
		}
	}
	if (optind >= argc)
		usage();
	rc = de_ctx_new(&ctx, &cfg);
	if (rc) {
		fprintf(stderr, "de-rm: %s\n", de_strerror(rc));
		return 1;
	}
	memset(&h, 0, sizeof(h));
	h.arg = &o;
	h.report = report;
	/* Quiet: only failures print; removals are not even reported. */
	if (!o.verbose && !o.dry)
		h.skip_results = (1u << DE_R_REMOVED) | (1u << DE_R_VANISHED);
	for (i = optind; i < argc; i++) {
		char *p = strdup(argv[i]), *dir, *base;
		struct de_target t;
		size_t len;
		int dfd;

		if (!p)
			return 1;
		len = strlen(p);
		while (len > 1 && p[len - 1] == '/')
			p[--len] = 0;
		base = strrchr(p, '/');
		if (base) {
			base++;
			dir = strndup(p, (size_t)(base - p));	/* keeps '/' */
		} else {
			base = p;
			dir = strdup("");
		}
		if (!dir)
			return 1;
		o.prefix = dir;
		if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
			fprintf(stderr, "de-rm: refusing to remove '.' or '..' "
				"directory: skipping '%s'\n", argv[i]);
			status = 1;
			free(p);
			free(dir);
			continue;
		}
		dfd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			fprintf(stderr, "de-rm: cannot remove '%s': %s\n",
				argv[i], de_strerror(errno));
			status = 1;
			free(p);
			free(dir);
			continue;
		}
		t.name = base;
		t.type = DE_T_UNKNOWN;
		t.ino = 0;
		o.failed = 0;
		rc = de_remove(ctx, dfd, &t, 1, &h, NULL, NULL);
		if (rc && rc != -EIO && rc != -EDQUOT) {
			fprintf(stderr, "de-rm: cannot remove '%s': %s\n",
				argv[i], de_strerror(rc));
			status = 1;
		}
		if (o.failed)
			status = 1;
		close(dfd);
		free(p);
		free(dir);
	}
	de_ctx_free(ctx);
	return status;
}

/*
 * mktree - make benchmark trees fast, with 2 threads.
 *
 *   mktree flat N DIR        N empty files in DIR
 *   mktree wide D F DIR      D directories of F empty files each
 *   mktree deep L F DIR      L nested levels, F empty files per level
 *
 * DIR must not exist.  Names: f0000000.., d00000...  Exit 0 or 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define NTHREADS 2

struct job {
	const int *fds;		/* directories to fill */
	long from, to;		/* index range over (dir, file) pairs */
	long files;		/* files per directory */
	int err;
};

static void *fill(void *arg)
{
	struct job *j = arg;
	char name[32];
	long k;

	for (k = j->from; k < j->to; k++) {
		int fd;

		snprintf(name, sizeof(name), "f%07ld", k % j->files);
		fd = openat(j->fds[k / j->files], name,
			    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			j->err = errno;
			return NULL;
		}
		close(fd);
	}
	return NULL;
}

/* Create files in each of the ndirs fds, files per dir, 2 threads. */
static int fill_all(const int *fds, long ndirs, long files)
{
	pthread_t th[NTHREADS];
	struct job j[NTHREADS];
	long total = ndirs * files, i;
	int rc = 0;

	for (i = 0; i < NTHREADS; i++) {
		j[i].fds = fds;
		j[i].files = files ? files : 1;
		j[i].from = total * i / NTHREADS;
		j[i].to = total * (i + 1) / NTHREADS;
		j[i].err = 0;
		if (!files)
			j[i].to = j[i].from;
		if (pthread_create(&th[i], NULL, fill, &j[i]))
			return -1;
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		if (j[i].err) {
			fprintf(stderr, "mktree: %s\n", strerror(j[i].err));
			rc = -1;
		}
	}
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: mktree flat N DIR | wide D F DIR | "
		"deep L F DIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	const char *dir;
	long a, b = 0, i;
	int *fds, top, rc;
	char name[32];

	if (argc < 4)
		usage();
	if (!strcmp(argv[1], "flat") && argc == 4) {
		a = atol(argv[2]);
		dir = argv[3];
	} else if ((!strcmp(argv[1], "wide") || !strcmp(argv[1], "deep")) &&
		   argc == 5) {
		a = atol(argv[2]);
		b = atol(argv[3]);
		dir = argv[4];
	} else {
		usage();
	}
	if (mkdir(dir, 0755)) {
		perror(dir);
		return 1;
	}
	top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0) {
		perror(dir);
		return 1;
	}
	if (argv[1][0] == 'f')
		return fill_all(&top, 1, a) ? 1 : 0;
	/* deep holds one fd per level while filling. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)a + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	fds = calloc((size_t)a + 1, sizeof(*fds));
	if (!fds)
		return 1;
	for (i = 0; i < a; i++) {
		int parent = argv[1][0] == 'w' ? top : (i ? fds[i - 1] : top);

		/* deep uses one-letter names so that 2,000 levels stay
		 * within PATH_MAX for tools that build full paths (stock
		 * rsync, find): the benchmark compares them too. */
		if (argv[1][0] == 'd')
			snprintf(name, sizeof(name), "d");
		else
			snprintf(name, sizeof(name), "d%05ld", i);
		if (mkdirat(parent, name, 0755) ||
		    (fds[i] = openat(parent, name, O_RDONLY | O_DIRECTORY |
				     O_CLOEXEC)) < 0) {
			perror(name);
			return 1;
		}
	}
	rc = fill_all(fds, a, b);
	for (i = 0; i < a; i++)
		close(fds[i]);
	free(fds);
	return rc ? 1 : 0;
}

/*
 * mktree - make benchmark trees fast, with one thread per CPU.
 *
 *   mktree [OPTIONS] flat N DIR      N files f0000000.. in DIR
 *   mktree [OPTIONS] rflat N DIR     N files with random names (16 to 40
 *                                    characters), so that name order, hash
 *                                    order and creation (inode) order differ
 *   mktree [OPTIONS] wide D F DIR    D directories d00000.. of F files each
 *   mktree [OPTIONS] deep L F DIR    L nested levels named "d", F files each
 *
 * Options:
 *   -j N      threads (default: online CPUs)
 *   -z SIZE   write SIZE bytes into every file (K, M, G suffixes; default 0).
 *             "-z 4K wide 100 1000" is the seed's small-file case.
 *   -c CHUNK  with -z: write the files in rounds of CHUNK bytes, one chunk
 *             per file per round, and syncfs() after every round, so that
 *             the extents of different files interleave on disk (fragmented
 *             big files for the dd scenario)
 *   -S K      create only every K-th file of each directory (same names as
 *             the full tree: the source of the sync-delete scenario)
 *   -t SECS   set every file's and directory's mtime to SECS (so that two
 *             trees made apart compare equal under rsync -a)
 *   -r SEED   seed for rflat names and -s (default 1)
 *   -s        create the files in a shuffled order across all directories
 *             (and names), so that inode numbers are scattered against
 *             names and directories, as in a tree that grew over time
 *
 * DIR must not exist.  Exit 0, 1 on error, 2 on usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXTHREADS 64

static long opt_size, opt_chunk, opt_stride = 1;
static long long opt_mtime = -1;
static int opt_shuffle;
static uint64_t opt_seed = 1;
static char *databuf;

struct job {
	const int *fds;		/* directories to fill */
	long from, to;		/* index range over (dir, file) pairs */
	long files;		/* files per directory */
	long total;		/* files in all (for -s) */
	unsigned bits;		/* -s: shuffle()'s width for total */
	int rnd;		/* random names */
	long round;		/* -c: which chunk to write, or -1 */
	int err;
};

/* splitmix64: a bijection on 64 bits, so distinct indexes give distinct
 * names without a table. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* File name of index k (within its directory) into name[64]. */
static void file_name(char *name, long k, int rnd)
{
	static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint64_t h, t;
	int len, i;

	if (!rnd) {
		snprintf(name, 64, "f%07ld", k);
		return;
	}
	h = mix((uint64_t)k ^ (opt_seed << 40));
	t = mix(h);
	/* 16 hex digits keep names unique; a tail of 0..24 characters
	 * makes their lengths vary like real file names. */
	len = snprintf(name, 64, "%016llx", (unsigned long long)h);
	for (i = 0; i < (int)(t % 25); i++) {
		t = mix(t);
		name[len++] = al[t % (sizeof(al) - 1)];
	}
	name[len] = '\0';
}

/* Write opt_size bytes (or one chunk of them) into fd.  Returns 0 or errno. */
static int write_data(int fd, long round)
{
	long off = 0, end = opt_size;

	if (round >= 0) {
		off = round * opt_chunk;
		end = off + opt_chunk < opt_size ? off + opt_chunk : opt_size;
	}
	while (off < end) {
		long n = end - off > (1L << 20) ? (1L << 20) : end - off;
		ssize_t w = pwrite(fd, databuf, (size_t)n, off);

		if (w < 0)
			return errno;
		off += w;
	}
	return 0;
}

/*
 * -s: a bijection on [0, total): a 4-round Feistel network on the
 * smallest even power of two 2^bits >= total (keys from the seed),
 * walked until it lands inside.
 */
static long shuffle(long k, long total, unsigned bits)
{
	unsigned half, r;
	uint64_t x = (uint64_t)k, mask, l, rt;

	half = bits / 2;
	mask = (1ULL << half) - 1;
	do {
		l = x >> half;
		rt = x & mask;
		for (r = 0; r < 4; r++) {
			uint64_t t = l ^ (mix(rt ^ (opt_seed << 8) ^ r) & mask);

			l = rt;
			rt = t;
		}
		x = (l << half) | rt;
	} while (x >= (uint64_t)total);
	return (long)x;
}

static void *fill(void *arg)
{
	struct job *j = arg;
	char name[64];
	long k;

	for (long n = j->from; n < j->to; n++) {
		int fd, flags = O_WRONLY | O_CLOEXEC;

		k = opt_shuffle ? shuffle(n, j->total, j->bits) : n;

		if (k % j->files % opt_stride)
			continue;
		file_name(name, k % j->files, j->rnd);
		if (j->round <= 0)
			flags |= O_CREAT | O_EXCL;
		fd = openat(j->fds[k / j->files], name, flags, 0644);
		if (fd < 0) {
			j->err = errno;
			return NULL;
		}
		if (opt_size && (j->err = write_data(fd, j->round))) {
			close(fd);
			return NULL;
		}
		if (opt_mtime >= 0) {
			struct timespec ts[2] = {
				{ opt_mtime, 0 }, { opt_mtime, 0 }
			};

			futimens(fd, ts);
		}
		close(fd);
	}
	return NULL;
}

/* Create (or, with round >= 0, extend) the files of ndirs directories with
 * files entries each, on nthreads threads.  Returns 0 or -1 (reported). */
static int fill_all(const int *fds, long ndirs, long files, int rnd,
		    int nthreads, long round)
{
	pthread_t th[MAXTHREADS];
	struct job j[MAXTHREADS];
	long total = files ? ndirs * files : 0, i;
	int rc = 0, started = 0;
	unsigned bits = 2;

	while ((1UL << bits) < (unsigned long)total)
		bits += 2;

	for (i = 0; i < nthreads; i++) {
		j[i].fds = fds;
		j[i].files = files ? files : 1;
		j[i].total = total;
		j[i].bits = bits;
		j[i].from = total * i / nthreads;
		j[i].to = total * (i + 1) / nthreads;
		j[i].rnd = rnd;
		j[i].round = round;
		j[i].err = 0;
		if (pthread_create(&th[i], NULL, fill, &j[i])) {
			fprintf(stderr, "mktree: cannot start a thread\n");
			rc = -1;
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
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
	fprintf(stderr, "usage: mktree [-j N] [-z SIZE [-c CHUNK]] [-S K] "
		"[-t SECS] [-r SEED] [-s]\n"
		"              flat N DIR | rflat N DIR | wide D F DIR | "
		"deep L F DIR\n");
	exit(2);
}

static long parse_size(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end || v < 0)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	const char *dir, *shape;
	long a, b = 1, i, ndirs;
	int *fds, top, rc = 0, nthreads, o, rnd = 0;
	char name[32];

	nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	while ((o = getopt(argc, argv, "j:z:c:S:t:r:s")) != -1) {
		switch (o) {
		case 'j': nthreads = atoi(optarg); break;
		case 'z': opt_size = parse_size(optarg); break;
		case 'c': opt_chunk = parse_size(optarg); break;
		case 'S': opt_stride = atol(optarg); break;
		case 't': opt_mtime = atoll(optarg); break;
		case 'r': opt_seed = strtoull(optarg, NULL, 10); break;
		case 's': opt_shuffle = 1; break;
		default: usage();
		}
	}
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > MAXTHREADS)
		nthreads = MAXTHREADS;
	if (opt_stride < 1)
		opt_stride = 1;
	argc -= optind;
	argv += optind;
	if (argc < 3)
		usage();
	shape = argv[0];
	if ((!strcmp(shape, "flat") || !strcmp(shape, "rflat")) && argc == 3) {
		a = atol(argv[1]);
		dir = argv[2];
		rnd = shape[0] == 'r';
	} else if ((!strcmp(shape, "wide") || !strcmp(shape, "deep")) &&
		   argc == 4) {
		a = atol(argv[1]);
		b = atol(argv[2]);
		dir = argv[3];
	} else {
		usage();
	}
	if (opt_size) {
		databuf = malloc(1L << 20);
		if (!databuf)
			return 1;
		memset(databuf, 0xa5, 1L << 20);
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
	if (shape[1] == 'l' || shape[0] == 'r') {
		/* flat and rflat: one directory of a files. */
		fds = &top;
		ndirs = 1;
		b = a;
	} else {
		/* deep holds one fd per level while filling. */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur < (rlim_t)a + 64) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		fds = calloc((size_t)a + 1, sizeof(*fds));
		if (!fds)
			return 1;
		ndirs = a;
		for (i = 0; i < a; i++) {
			int parent = shape[0] == 'w' ? top :
				     (i ? fds[i - 1] : top);

			/* deep uses one-letter names so that 2,000 levels
			 * stay within PATH_MAX for tools that build full
			 * paths (stock rsync, find): the benchmark compares
			 * them too. */
			if (shape[0] == 'd')
				snprintf(name, sizeof(name), "d");
			else
				snprintf(name, sizeof(name), "d%05ld", i);
			if (mkdirat(parent, name, 0755) ||
			    (fds[i] = openat(parent, name, O_RDONLY |
					     O_DIRECTORY | O_CLOEXEC)) < 0) {
				perror(name);
				return 1;
			}
		}
	}
	if (opt_size && opt_chunk > 0 && opt_chunk < opt_size) {
		/* Fragmented: every round adds one chunk to every file and
		 * syncfs() makes the allocator place it now, next to the
		 * previous file's chunk, instead of delaying allocation
		 * until one contiguous extent per file is possible. */
		long r, rounds = (opt_size + opt_chunk - 1) / opt_chunk;

		for (r = 0; r < rounds && !rc; r++) {
			rc = fill_all(fds, ndirs, b, rnd, nthreads, r);
			syncfs(top);
		}
	} else {
		rc = fill_all(fds, ndirs, b, rnd, nthreads, -1);
	}
	if (opt_mtime >= 0) {
		struct timespec ts[2] = { { opt_mtime, 0 }, { opt_mtime, 0 } };

		for (i = 0; fds != &top && i < ndirs; i++)
			futimens(fds[i], ts);
		futimens(top, ts);
	}
	if (fds != &top) {
		for (i = 0; i < ndirs; i++)
			close(fds[i]);
		free(fds);
	}
	close(top);
	return rc ? 1 : 0;
}

/*
 * holefill.c - the lab prototype behind "Holes" in NOTES.md (session
 * 55), kept to rerun it; not part of the build.  It reads a tree of
 * directories of files whole, cuts it into windows of directories of
 * at most W estimated directory blocks (as global.c estimates them,
 * rounded a little higher), unlinks each window's files in one inode
 * order and, with FILL 1, first marks changed (fchownat to -1, -1: its
 * ctime) one file of a later window in each inode-table block of up to
 * 7 that the order skips.  The engine does the same with the next
 * window only, and with chmod to the file's own mode (fchownat clears
 * set-user-ID bits and file capabilities).
 *
 *     cc -O2 -o holefill holefill.c
 *     bench/slowdisk/bench.py ... --peer 'pfill=./holefill {t} 682 1'
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct f { unsigned long ino; int dir; char *name; int win; };
static struct f *fs; static size_t nf, capf;
static int *dfd; static char **dname; static size_t *dbytes; static int nd;
static int cmp(const void *a, const void *b)
{
	unsigned long x = (*(struct f *const *)a)->ino, y = (*(struct f *const *)b)->ino;
	return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
	int root, fill = argc > 3 && atoi(argv[3]);
	long W = atol(argv[2]);
	DIR *r;
	struct dirent *e;
	unsigned long maxino = 0, touched = 0;
	long *byino;

	root = open(argv[1], O_RDONLY | O_DIRECTORY);
	r = fdopendir(dup(root));
	dfd = malloc(100000 * sizeof(int)); dname = malloc(100000 * sizeof(char *));
	dbytes = calloc(100000, sizeof(size_t));
	while ((e = readdir(r)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			dname[nd++] = strdup(e->d_name);
	/* depth-first order is listing order; sort names for determinism */
	for (int i = 0; i < nd; i++) {
		DIR *d;
		dfd[i] = openat(root, dname[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		d = fdopendir(dup(dfd[i]));
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
				continue;
			if (nf == capf) { capf = capf ? 2 * capf : 1 << 16; fs = realloc(fs, capf * sizeof(*fs)); }
			fs[nf].ino = e->d_ino; fs[nf].dir = i; fs[nf].name = strdup(e->d_name); fs[nf].win = -1;
			dbytes[i] += (8 + strlen(e->d_name) + 4) & ~3UL;
			if (e->d_ino > maxino) maxino = e->d_ino;
			nf++;
		}
		closedir(d);
	}
	byino = malloc((maxino + 1) * sizeof(long));
	for (unsigned long k = 0; k <= maxino; k++) byino[k] = -1;
	for (size_t k = 0; k < nf; k++) byino[fs[k].ino] = (long)k;
	/* windows */
	int w = 0; long blocks = 0; int *dwin = malloc(nd * sizeof(int));
	for (int i = 0; i < nd; i++) {
		if (blocks >= W) { w++; blocks = 0; }
		dwin[i] = w; blocks += (long)(dbytes[i] / 4096 + 1);
	}
	for (size_t k = 0; k < nf; k++) fs[k].win = dwin[fs[k].dir];
	struct f **v = malloc(nf * sizeof(*v));
	size_t s = 0;
	for (int cw = 0; cw <= w; cw++) {
		size_t n = 0;
		for (size_t k = 0; k < nf; k++) if (fs[k].win == cw) v[n++] = &fs[k];
		qsort(v, n, sizeof(*v), cmp);
		unsigned long prevb = 0;
		for (size_t k = 0; k < n; k++) {
			unsigned long b = (v[k]->ino - 1) / 16;
			if (fill && k && b > prevb + 1 && b <= prevb + 8) {
				for (unsigned long hb = prevb + 1; hb < b; hb++) {
					for (unsigned long x = hb * 16 + 1; x <= hb * 16 + 16 && x <= maxino; x++) {
						long j = byino[x];
						if (j >= 0 && fs[j].win > cw) {
							if (fchownat(dfd[fs[j].dir], fs[j].name, -1, -1, AT_SYMLINK_NOFOLLOW) == 0)
								touched++;
							break;
						}
					}
				}
			}
			if (unlinkat(dfd[v[k]->dir], v[k]->name, 0) < 0) perror(v[k]->name);
			byino[v[k]->ino] = -1;
			prevb = b; s++;
		}
		/* a window's dirs go when the window is done */
		for (int i = 0; i < nd; i++)
			if (dwin[i] == cw) { close(dfd[i]); if (unlinkat(root, dname[i], AT_REMOVEDIR) < 0) perror(dname[i]); }
	}
	fprintf(stderr, "windows %d files %zu touched %lu\n", w + 1, s, touched);
	return 0;
}

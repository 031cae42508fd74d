/*
 * peek.c - fillers from directories the window has not read.
 *
 * A window's inode order has its holes filled from the files of the
 * windows read ahead of it (global.c, "Filling the holes").  In a tree of
 * millions those are not all read: the read stops at the window's
 * entries (the memory of the listings and of the sort) or its fds, a
 * window or two ahead, where the holes want four.  Halving the window
 * without them made twice the sweeps of the inode table: the
 * four-million-file tree took 1.9 times as long (bench/results/
 * 2026-12-06/NOTES.md, "Filling where the window has room"); with them
 * read whole it cost what the million's did a file, but held 156 MiB
 * (2026-12-07/NOTES.md, "Four million with room to fill").
 *
 * So the directories next on the stack, the ones the windows ahead would
 * read, are listed here without being read into the window: of each
 * entry only a regular file in an inode-table block that the window's
 * order skips and nothing else fills is kept, one a block, by name and
 * inode, up to a part of the window's entries (tunables.h
 * DE__PEEK_PART).  The listing is let go; the directory
 * is read again in its own window, its blocks then in the page cache.
 * A filler is touched by its path under its directory's parent (sys.c
 * de__touch_at: no symlink, no mount crossed, the file checked against
 * the inode listed), so nothing of a directory renamed away since is
 * touched, and a directory not entered would not have been peeked.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t block_of(uint64_t ino)
{
	return (ino - 1) / DE__ITABLE_INODES;
}

static int is_hole(const struct de__peek *p, uint64_t b)
{
	return b >= p->b0 && b - p->b0 < p->nb &&
	       (p->holes[(b - p->b0) / 8] >> ((b - p->b0) % 8) & 1);
}

static void set_hole(struct de__peek *p, uint64_t b, int on)
{
	uint8_t bit = (uint8_t)(1u << ((b - p->b0) % 8));

	if (on)
		p->holes[(b - p->b0) / 8] |= bit;
	else
		p->holes[(b - p->b0) / 8] &= (uint8_t)~bit;
}

/* The holes to look for: those order.c de__fill_runs_at() fills from the
 * fillers after the order v, the ones of its last run, that f does not
 * fill.  f keeps the filler it takes for each hole, the first of its
 * block, and lets the rest go (*nf).  -1: none. */
static int peek_start(struct de__peek *p, const struct de__ino_ent *v,
		      size_t nv, struct de__ino_ent *f, size_t *nf)
{
	size_t a, i;
	uint64_t b;

	if (!nv || !v[nv - 1].ino)
		return -1;
	for (a = nv - 1; a > 0 && v[a - 1].ino <= v[a].ino && v[a - 1].ino;)
		a--;
	p->b0 = block_of(v[a].ino);
	p->nb = block_of(v[nv - 1].ino) - p->b0 + 1;
	/* The bitmap spans the run's inode-table blocks: on a file system
	 * of billions of inodes, megabytes.  Where the run's files are a
	 * block in DE__PEEK_SPAN or sparser, few of its gaps are narrow
	 * enough to fill, and it is not looked for. */
	if (p->nb / DE__PEEK_SPAN > nv - a)
		return -1;
	p->holes = calloc(p->nb / 8 + 1, 1);
	if (!p->holes)
		return -1;
	for (i = a + 1; i < nv; i++) {
		uint64_t pb = block_of(v[i - 1].ino), ib = block_of(v[i].ino);

		if (ib <= pb + 1 || ib > pb + DE__FILL_GAP)
			continue;
		for (b = pb + 1; b < ib; b++)
			set_hole(p, b, 1);
		p->left += ib - pb - 1;
	}
	/* What the window's own rest fills is not a hole to peek for. */
	for (i = 0, a = 0; i < *nf; i++)
		if (f[i].ino && is_hole(p, b = block_of(f[i].ino))) {
			set_hole(p, b, 0);
			p->left--;
			f[a++] = f[i];
		}
	*nf = a;
	return 0;
}

/* Keep a regular file of a hole's block as its filler, once a block. */
static int peek_cb(void *arg, const char *name, size_t len, uint64_t ino,
		   enum de_type type)
{
	struct de__peek *p = arg;
	struct de__ino_ent *f;
	uint64_t b;
	long at;

	p->ents++;
	if (type != DE_T_FILE || !ino || !is_hole(p, b = block_of(ino)))
		return 0;
	if (p->nf >= p->max) {
		p->left = 0;		/* no more: the window's memory */
		return 1;
	}
	f = de__grow(p->f, p->nf, &p->fcap, sizeof(*f), 256);
	if (!f)
		return -ENOMEM;
	p->f = f;
	at = de__arena_add(&p->names, &p->nlen, &p->ncap, name, len);
	if (at < 0)
		return (int)at;
	p->f[p->nf++] = (struct de__ino_ent){ .ino = ino, .n = p->dir,
		.i = (uint32_t)at, .k = DE__PEEKED };
	set_hole(p, b, 0);
	return --p->left ? 0 : 1;
}

/* List s for the holes left.  s is entered as the window's read would
 * enter it (scan.c open_child, check_opened): from its parent, in place,
 * by a name that is no symlink, the directory listed and no mount. */
static void peek_dir(de_ctx *ctx, struct de__peek *p, struct de__node *s)
{
	struct de__node *par = s->parent;
	struct de__st st;
	int pfd, fd;

	if (!p->left || s->fl.skip_scan || s->fl.base || !par || !s->ino ||
	    !de__dino_is_stat(s->fstype) || de__check_place(ctx, par))
		return;
	pfd = de__node_pin(ctx, par, -1);
	if (pfd < 0)
		return;
	fd = de__open_dir(ctx, pfd, s->name);
	de__node_unpin(ctx, par);
	if (fd < 0)
		return;
	if (de__fstat(ctx, fd, s->name, &st) == 0 && st.dev == par->dev &&
	    st.ino == s->ino && st.mount_root != 1) {
		p->dir = s;
		(void)de__read_dir(ctx, fd, s->name, ctx->caller_buf, 0,
				   peek_cb, p);
	}
	close(fd);
}

/* f, *nf of them, with what p found, by inode. */
static struct de__ino_ent *merge(struct de__peek *p, struct de__ino_ent *f,
				 size_t *nf)
{
	struct de__ino_ent *m;

	if (!p->nf || !(m = realloc(f, (*nf + p->nf) * sizeof(*m))))
		return f;
	memcpy(m + *nf, p->f, p->nf * sizeof(*m));
	*nf += p->nf;
	de__sort_by_ino(m, *nf);
	free(p->f);
	p->f = NULL;
	p->nf = p->fcap = 0;
	return m;
}

/* See global.h. */
struct de__ino_ent *de__peek(de_ctx *ctx, struct de__peek *p,
			     struct de__node *const *stack, size_t nstack,
			     const struct de__ino_ent *v, size_t nv,
			     struct de__ino_ent *f, size_t *nf)
{
	size_t k;

	if (peek_start(p, v, nv, f, nf) < 0)
		return f;
	for (k = nstack; k-- > 0 && p->left && p->ents < p->want &&
	     !de__cancelled(ctx);)
		if (!((uintptr_t)stack[k] & 1))
			peek_dir(ctx, p, stack[k]);
	return merge(p, f, nf);
}

/* See global.h. */
int de__peek_touch(de_ctx *ctx, const struct de__peek *p,
		   const struct de__ino_ent *f)
{
	struct de__node *s = f->n, *par = s->parent;
	char path[2 * 256 + 2];
	int pfd, rc;

	if (snprintf(path, sizeof(path), "%s/%s", s->name,
		     p->names + f->i) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	pfd = de__node_pin(ctx, par, -1);
	if (pfd < 0)
		return pfd;
	rc = de__touch_at(ctx, pfd, path, par->dev, f->ino);
	de__node_unpin(ctx, par);
	return rc;
}

/* See global.h. */
void de__peek_end(struct de__peek *p)
{
	free(p->holes);
	free(p->f);
	free(p->names);
	memset(p, 0, sizeof(*p));
}

/*
 * order.c - canonical order and inode order (where each pays: policy.c).
 *
 * Canonical order is the order stock rsync deletes in: inside a directory,
 * the reverse of rsync's sort (protocol >= 29 sorts non-directories first,
 * then directories, each by unsigned bytes), so: directories in descending
 * name order, then non-directories in descending name order.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct sortarg {
	struct de__node *n;
	int (*cmp)(const char *, int, const char *, int);
	int plain;
};

static int cmp_canon(const void *a, const void *b, void *arg)
{
	const struct sortarg *s = arg;
	const struct de__ent *x = a, *y = b;
	const char *xn = s->n->ls.arena + x->name, *yn = s->n->ls.arena + y->name;
	int xd = x->type == DE_T_DIR, yd = y->type == DE_T_DIR;

	/* Descending rsync order, so compare y against x. */
	if (s->cmp)
		return s->cmp(yn, yd, xn, xd);
	if (!s->plain && xd != yd)
		return yd - xd;		/* dirs first */
	return strcmp(yn, xn);		/* glibc strcmp is unsigned */
}

/* Sort n's listing into canonical order. */
void de__sort_canonical(de_ctx *ctx, struct de__node *n)
{
	struct sortarg s = { n, ctx->run.hooks->compare,
			     !!(ctx->cfg.flags & DE_F_PLAIN_ORDER) };

	if (n->ls.nents > 1)
		qsort_r(n->ls.ents, n->ls.nents, sizeof(*n->ls.ents), cmp_canon, &s);
}

static int cmp_ino(const void *a, const void *b, void *arg)
{
	const struct de__node *n = arg;
	uint64_t x = n->ls.ents[*(const uint32_t *)a].ino;
	uint64_t y = n->ls.ents[*(const uint32_t *)b].ino;

	return x < y ? -1 : x > y;
}

static int cmp_target_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct de_target *)a)->ino;
	uint64_t y = ((const struct de_target *)b)->ino;

	return x < y ? -1 : x > y;
}

/* See delete_engine.h. */
int de_order_targets(de_ctx *ctx, int dirfd, struct de_target *t, size_t n)
{
	size_t k, w = n;
	long fstype;

	if (!ctx || dirfd < 0 || (n && !t))
		return -EINVAL;
	/*
	 * Directories to the end, keeping their order: scanning down, each
	 * takes the highest slot not yet taken by one, and what it displaces
	 * is a non-directory (whose order the sort below decides).
	 */
	for (k = n; k-- > 0;)
		if (t[k].type == DE_T_DIR) {
			struct de_target d = t[k];

			t[k] = t[--w];
			t[w] = d;
		}
	/* A serial run (btrfs) sorts each call's listing canonically. */
	fstype = de__fs_type(dirfd);
	if (w > 1 && de__sort_targets(ctx, fstype))
		qsort(t, w, sizeof(*t), cmp_target_ino);
	return 0;
}

/*
 * Index array of n's non-directory entries to delete, in the order to
 * unlink them (inode order where wanted).  Returns NULL on ENOMEM (the
 * caller then walks the listing directly); *count set.
 */
uint32_t *de__inode_order(struct de__node *n, size_t *count)
{
	uint32_t *idx = malloc((n->ls.nents ? n->ls.nents : 1) * sizeof(*idx));
	size_t i, k = 0;

	*count = 0;
	if (!idx)
		return NULL;
	for (i = 0; i < n->ls.nents; i++)
		if (n->ls.ents[i].type != DE_T_DIR &&
		    n->ls.ents[i].action == DE_A_DELETE && !n->ls.ents[i].done)
			idx[k++] = (uint32_t)i;
	if (k > 1 && de__want_inode_sort(n->ctx, n->fstype))
		qsort_r(idx, k, sizeof(*idx), cmp_ino, n);
	*count = k;
	return idx;
}

static int by_ino(const void *a, const void *b)
{
	const struct de__ino_ent *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* See internal.h. */
void de__sort_by_ino(struct de__ino_ent *v, size_t n)
{
	qsort(v, n, sizeof(*v), by_ino);
}

/*
 * order.c - canonical order and inode order (where each pays: policy.c).
 *
 * Canonical order is the order stock rsync deletes in: inside a directory,
 * the reverse of rsync's sort (protocol >= 29 sorts non-directories first,
 * then directories, each by unsigned bytes), so: directories in descending
 * name order, then non-directories in descending name order.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sortarg {
	struct de__node *n;
	int (*cmp)(const char *, int, const char *, int);
	int plain;
	const uint32_t *idx;		/* directory_order()'s */
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
			     !!(ctx->cfg.flags & DE_F_PLAIN_ORDER), NULL };

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

static int cmp_target_ino(const void *a, const void *b, void *arg)
{
	uint64_t x = ((const struct de_target *)a)->ino;
	uint64_t y = ((const struct de_target *)b)->ino;

	(void)arg;
	return x < y ? -1 : x > y;
}

static size_t target_bytes(const void *el, void *arg)
{
	(void)arg;
	return de__name_bytes(strlen(((const struct de_target *)el)->name));
}

/*
 * A listing the caller gave (the run's start directory, a set's
 * directory: rsync's names, in its own order) has lost the directory's
 * order, which the runs of de__inode_order() are cut by.  dir_order()
 * reads the directory once more through fd (its blocks are cached: the
 * caller has just read it) and sorts k names into its order, names it no
 * longer lists last.  Names are got through name_at(arg, j, &len); key
 * receives the result, position << 32 | j.  Returns 0, or a negative
 * errno (no memory, no read) with key untouched.
 */
typedef const char *(*name_fn)(const void *arg, size_t j, size_t *len);

struct positions {
	name_fn name_at;
	const void *arg;
	uint32_t *slot, mask, next;
	uint64_t *key;
};

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (len--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int position_cb(void *arg, const char *name, size_t len,
		       uint64_t ino, enum de_type type)
{
	struct positions *p = arg;
	uint32_t h = name_hash(name, len) & p->mask, j;

	(void)ino;
	(void)type;
	for (; (j = p->slot[h]) != 0; h = (h + 1) & p->mask) {
		size_t jlen;
		const char *jn = p->name_at(p->arg, j - 1, &jlen);

		if (jlen == len && !memcmp(jn, name, len)) {
			p->key[j - 1] = (uint64_t)p->next++ << 32 | (j - 1);
			break;
		}
	}
	return 0;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int dir_order(de_ctx *ctx, int fd, size_t k, name_fn name_at,
		     const void *arg, uint64_t *key)
{
	struct positions p = { name_at, arg, NULL, 1, 0, key };
	void *buf = malloc(DE__BUFSZ);
	size_t j, len;
	int dfd = -1, rc = -ENOMEM;

	while (p.mask < 2 * k)
		p.mask <<= 1;
	p.slot = calloc(p.mask--, sizeof(*p.slot));
	if (buf && p.slot) {
		dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = dfd < 0 ? -errno : 0;
	}
	for (j = 0; rc == 0 && j < k; j++) {
		const char *name = name_at(arg, j, &len);
		uint32_t h = name_hash(name, len) & p.mask;

		while (p.slot[h])
			h = (h + 1) & p.mask;
		p.slot[h] = (uint32_t)j + 1;
		key[j] = (uint64_t)UINT32_MAX << 32 | j;
	}
	if (rc == 0)
		rc = de__read_dir(ctx, dfd, ".", buf, 0, position_cb, &p);
	if (rc == 0)
		qsort(key, k, sizeof(*key), by_key);
	if (dfd >= 0)
		close(dfd);
	free(buf);
	free(p.slot);
	return rc;
}

static const char *idx_name(const void *arg, size_t j, size_t *len)
{
	const struct sortarg *s = arg;
	const struct de__ent *e = &s->n->ls.ents[s->idx[j]];

	*len = e->len;
	return de__ent_name(s->n, e);
}

/* n's files idx[0..k), given by the caller, into its directory's order. */
static void directory_order(struct de__node *n, int fd, uint32_t *idx,
			    size_t k)
{
	struct sortarg s = { .n = n, .idx = idx };
	uint64_t *key = malloc(k * sizeof(*key));
	uint32_t *was = malloc(k * sizeof(*was));
	size_t j;

	if (key && was && dir_order(n->ctx, fd, k, idx_name, &s, key) == 0) {
		memcpy(was, idx, k * sizeof(*idx));
		for (j = 0; j < k; j++)
			idx[j] = was[(uint32_t)key[j]];
	}
	free(was);
	free(key);
}

static size_t idx_bytes(const void *el, void *arg)
{
	const struct de__node *n = arg;

	return de__dirent_bytes(&n->ls.ents[*(const uint32_t *)el]);
}

/* See global.h. */
size_t de__listing_bytes(const struct de__node *n)
{
	size_t i, bytes = 0;

	for (i = 0; i < n->ls.nents; i++)
		bytes += de__dirent_bytes(&n->ls.ents[i]);
	return bytes;
}

/* See global.h. */
size_t de__run_bytes(struct de__node *const *n, size_t k)
{
	const de_ctx *ctx = n[0]->ctx;
	size_t i, run = ctx->run.plan.chunk_blocks * 4096;

	if (!de__want_fill(ctx))
		return run;
	for (i = 0; i < k; i++)
		if (de__given_listing(n[i]) &&
		    (k == 1 || de__listing_bytes(n[i]) > run / 2))
			return run / 2;
	return run;
}

/*
 * Index array of n's non-directory entries to delete, in the order to
 * unlink them: inode order where wanted.  A listing of more than a
 * run's entries (de__run_bytes) is taken in the directory's order, in
 * runs of that many bytes of entries, each run in inode order.  fd:
 * n's, for directory_order().  Returns NULL on ENOMEM (the caller then
 * walks the listing directly); *count set.
 */
uint32_t *de__inode_order(struct de__node *n, int fd, size_t *count)
{
	uint32_t *idx = malloc((n->ls.nents ? n->ls.nents : 1) * sizeof(*idx));
	size_t i, k = 0, bytes = 0, run = de__run_bytes(&n, 1);

	*count = 0;
	if (!idx)
		return NULL;
	for (i = 0; i < n->ls.nents; i++) {
		const struct de__ent *e = &n->ls.ents[i];

		if (e->type != DE_T_DIR && e->action == DE_A_DELETE && !e->done) {
			idx[k++] = (uint32_t)i;
			bytes += de__dirent_bytes(e);
		}
	}
	*count = k;
	if (k < 2 || !de__want_inode_sort(n->ctx, n->fstype))
		return idx;
	if (!run || bytes <= run) {
		qsort_r(idx, k, sizeof(*idx), cmp_ino, n);
		return idx;
	}
	if (!n->parent || n->fl.base)
		directory_order(n, fd, idx, k);
	de__sort_runs(idx, k, sizeof(*idx), run, idx_bytes, cmp_ino, n);
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

/* See internal.h. */
void de__sort_runs(void *v, size_t n, size_t size, size_t run,
		   size_t (*bytes_of)(const void *el, void *arg),
		   int (*cmp)(const void *, const void *, void *), void *arg)
{
	char *base = v;
	size_t i, from = 0, bytes = 0;

	for (i = 0; i <= n; i++) {
		if (i == n || (run && bytes >= run)) {
			qsort_r(base + from * size, i - from, size, cmp, arg);
			from = i;
			bytes = 0;
		}
		if (i < n)
			bytes += bytes_of(base + i * size, arg);
	}
}

static size_t ino_ent_bytes(const void *el, void *arg)
{
	const struct de__ino_ent *x = el;

	(void)arg;
	return de__dirent_bytes(&x->n->ls.ents[x->i]);
}

static int ino_ent_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	return by_ino(a, b);
}

/* See internal.h. */
void de__sort_ino_runs(struct de__ino_ent *v, size_t n, size_t run)
{
	de__sort_runs(v, n, sizeof(*v), run, ino_ent_bytes, ino_ent_cmp, NULL);
}

static const char *target_name(const void *arg, size_t j, size_t *len)
{
	const struct de_target *t = arg;

	*len = strlen(t[j].name);
	return t[j].name;
}

/*
 * Files t[0..w) of dirfd into inode order, or where their entries are
 * more than a run's bytes, into the directory's order, in runs of that
 * many bytes each in inode order, as de__inode_order() will take them as
 * the run's listing (de__run_bytes, known here before the run is
 * planned): a caller that gives the engine a huge directory's files in
 * pieces (rsync: what it read, DEL_READ_MAX at a time) gives each piece
 * a few runs' directory blocks, not all of them.
 */
static void order_files(de_ctx *ctx, int dirfd, struct de_target *t,
			size_t w)
{
	struct stat st;
	size_t i, bytes = 0, run = 0;
	uint64_t *key = NULL;
	struct de_target *was = NULL;

	if (fstat(dirfd, &st) == 0)
		run = de__chunk_blocks(ctx, st.st_dev) * 4096 /
		      (de__would_fill(ctx, st.st_dev) ? 2 : 1);
	for (i = 0; run && i < w; i++)
		bytes += de__name_bytes(strlen(t[i].name));
	if (bytes > run) {
		key = malloc(w * sizeof(*key));
		was = malloc(w * sizeof(*was));
	}
	if (!key || !was || dir_order(ctx, dirfd, w, target_name, t, key)) {
		free(key);
		free(was);
		qsort_r(t, w, sizeof(*t), cmp_target_ino, NULL);
		return;
	}
	memcpy(was, t, w * sizeof(*t));
	for (i = 0; i < w; i++)
		t[i] = was[(uint32_t)key[i]];
	free(was);
	free(key);
	de__sort_runs(t, w, sizeof(*t), run, target_bytes, cmp_target_ino, NULL);
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
		order_files(ctx, dirfd, t, w);
	return 0;
}

/* The first of f's nf files (by inode) in inode-table block b, or NULL. */
static const struct de__ino_ent *in_block(const struct de__ino_ent *f,
					  size_t nf, uint64_t b)
{
	uint64_t lo = b * DE__ITABLE_INODES + 1;
	size_t a = 0, z = nf;

	while (a < z) {
		size_t m = a + (z - a) / 2;

		if (f[m].ino < lo)
			a = m + 1;
		else
			z = m;
	}
	return a < nf && f[a].ino < lo + DE__ITABLE_INODES ? &f[a] : NULL;
}

/* Reverse t[0..n). */
static void reverse(struct de_target *t, size_t n)
{
	size_t i;

	for (i = 0; i < n / 2; i++) {
		struct de_target x = t[i];

		t[i] = t[n - 1 - i];
		t[n - 1 - i] = x;
	}
}

/* See delete_engine.h.  de_order_targets() left the files first, in runs
 * each ascending by inode, then the directories: the last DE__FILL_AHEAD
 * runs are held back (as many as there are but the first), and the
 * directories rotated in before them. */
size_t de_order_cut(de_ctx *ctx, int dirfd, struct de_target *t, size_t n)
{
	struct stat st;
	size_t w, k, cut, runs = 0;

	if (!ctx || dirfd < 0 || !t || fstat(dirfd, &st) ||
	    !de__would_fill(ctx, st.st_dev))
		return n;
	for (w = 0; w < n && t[w].type != DE_T_DIR; w++)
		;
	cut = w;
	for (k = w; k-- > 1 && runs < DE__FILL_AHEAD;)
		if (t[k].ino < t[k - 1].ino) {
			cut = k;
			runs++;
		}
	reverse(t + cut, w - cut);
	reverse(t + w, n - w);
	reverse(t + cut, n - cut);
	return cut + (n - w);
}

/* The inode-table blocks between the ones of prev and ino, if they are
 * up to DE__FILL_GAP apart, each with a file it holds of the runs ahead
 * (r->f), or where those reach the end of the order, of r->after,
 * touched by r->touch(). */
static void fill_holes(de_ctx *ctx, const struct de__fill_runs *r,
		       uint64_t ino)
{
	const struct de__ino_ent *f;
	uint64_t b, pb, ib;

	if (!r->prev || !ino || (!r->nf && !r->nafter))
		return;
	pb = (r->prev - 1) / DE__ITABLE_INODES;
	ib = (ino - 1) / DE__ITABLE_INODES;
	if (ib <= pb + 1 || ib > pb + DE__FILL_GAP)
		return;
	for (b = pb + 1; b < ib && !de__cancelled(ctx); b++) {
		f = in_block(r->f, r->nf, b);
		if (!f && r->upto == r->n)
			f = in_block(r->after, r->nafter, b);
		if (f)
			(void)r->touch(ctx, r->arg, f);
	}
}

/* See global.h. */
int de__touch_listed(de_ctx *ctx, int fd, const struct de__ino_ent *f)
{
	const struct de__node *n = f->n;

	return de__touch_at(ctx, fd, n->ls.arena + n->ls.ents[f->i].name,
			    n->dev, f->ino);
}

/* See global.h. */
struct de__ino_ent *de__given(de_ctx *ctx, struct de__node *root,
			      struct de__ino_ent *f, size_t *nf)
{
	const struct de_target *t = ctx->run.fill.t;
	size_t i, n = root ? ctx->run.fill.n : 0;
	struct de__ino_ent *m;

	m = n && n <= UINT32_MAX ? realloc(f, (*nf + n) * sizeof(*f)) : NULL;
	for (i = 0; m && i < n; i++)
		if (t[i].type == DE_T_FILE && t[i].ino)
			m[(*nf)++] = (struct de__ino_ent){
				.ino = t[i].ino, .n = root, .i = (uint32_t)i,
				.k = DE__GIVEN };
	if (m)
		f = m;
	if (f)
		de__sort_by_ino(f, *nf);
	return f;
}

/* See global.h. */
int de__touch_given(de_ctx *ctx, int fd, const struct de__ino_ent *f)
{
	int pfd = fd >= 0 ? fd : de__node_pin(ctx, f->n, -1), rc;

	rc = pfd < 0 ? pfd : de__touch_at(ctx, pfd, ctx->run.fill.t[f->i].name,
					  f->n->dev, f->ino);
	if (fd < 0 && pfd >= 0)
		de__node_unpin(ctx, f->n);
	return rc;
}

/* The end of r's run that starts at a: where the inodes go down. */
static size_t run_end(const struct de__fill_runs *r, size_t a)
{
	uint64_t last = r->ino(r->arg, a), ino;

	while (++a < r->n && (ino = r->ino(r->arg, a)) >= last)
		last = ino;
	return a;
}

/* The fillers of r's entries a to z, a run (so by inode) into r->f. */
static void run_fillers(struct de__fill_runs *r, size_t a, size_t z)
{
	free(r->f);
	r->nf = 0;
	r->f = z > a ? malloc((z - a) * sizeof(*r->f)) : NULL;
	for (; r->f && a < z; a++)
		r->nf += r->filler(r->arg, a, &r->f[r->nf]) != 0;
}

/* See global.h.  Each run's end is found once: as the next run's, then
 * kept in r->next for when it is the current one. */
void de__fill_runs_at(de_ctx *ctx, struct de__fill_runs *r, size_t i)
{
	uint64_t ino = r->ino(r->arg, i);

	if (i == r->end) {
		size_t k;

		r->end = r->next > i ? r->next : run_end(r, i);
		r->next = r->end < r->n ? run_end(r, r->end) : r->end;
		r->upto = r->next;
		for (k = 1; k < DE__FILL_AHEAD && r->upto < r->n; k++)
			r->upto = run_end(r, r->upto);
		run_fillers(r, r->end, r->upto);
		if (r->upto > r->next && r->f)
			de__sort_by_ino(r->f, r->nf);
	}
	fill_holes(ctx, r, ino);
	r->prev = ino;
}

/* See global.h. */
void de__fill_runs_end(struct de__fill_runs *r)
{
	free(r->f);
	r->f = NULL;
	r->nf = 0;
}

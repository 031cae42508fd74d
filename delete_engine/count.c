/*
 * count.c - de_count(): how many entries a removal would reach, for an
 * estimate of the time it has left (rsync's --progress).
 *
 * One thread, one pass, two fds at a time whatever the depth: a directory
 * is read whole, its subdirectories' names kept, and it is closed as soon
 * as one of them is open; going back up opens ".." and checks that
 * it is still the directory that was left (dev and inode), else the
 * count stops there, short.  Like the removal, it never follows a
 * symlink (O_NOFOLLOW from a verified fd) and never enters a mount point
 * or another file system: what the removal keeps is not counted.  Only
 * reads: a race with the tree changing makes the count wrong, never
 * anything else.  Its reads are timed as the global schedule's probe
 * times its own (policy.c de__note_read): after the count, the run finds
 * the directories cached and could not tell a slow disk by them.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A directory on the way down: its identity, and the names of its
 * subdirectories not entered yet, in one arena of NUL-ended names. */
struct frame {
	dev_t dev;
	ino_t ino;
	char *names;
	size_t used, size, next;
};

struct counter {
	de_ctx *ctx;
	const struct de_hooks *hooks;
	dev_t dev;			/* the set's file system */
	uint64_t n;
	uint64_t last_ms, t0_ms;
	void *buf;
	struct frame *stack;
	size_t depth, cap;
	int cancelled;
};

static void tick(struct counter *c)
{
	struct de_progress p = { 0 };
	uint64_t now = de__now_ms();

	if (!c->hooks || !c->hooks->progress ||
	    now - c->last_ms < c->ctx->cfg.progress_ms)
		return;
	c->last_ms = now;
	p.counted = c->n;
	p.elapsed_ms = now - c->t0_ms;
	if (c->hooks->progress(c->hooks->arg, &p))
		c->cancelled = 1;
}

static int keep_name(struct frame *f, const char *name, size_t len)
{
	if (f->used + len + 1 > f->size) {
		size_t size = f->size ? 2 * f->size : 256;
		char *p;

		while (size < f->used + len + 1)
			size *= 2;
		if (!(p = realloc(f->names, size)))
			return -ENOMEM;
		f->names = p;
		f->size = size;
	}
	memcpy(f->names + f->used, name, len + 1);
	f->used += len + 1;
	return 0;
}

static int count_ent(void *arg, const char *name, size_t len, uint64_t ino,
		     enum de_type type)
{
	struct counter *c = arg;

	(void)ino;
	c->n++;
	if ((c->n & 4095) == 0)
		tick(c);
	/* DE_T_UNKNOWN: entered if it opens as a directory. */
	if (type != DE_T_DIR && type != DE_T_UNKNOWN)
		return 0;
	return keep_name(&c->stack[c->depth - 1], name, len);
}

/* Read directory fd (left open) as a new frame on the stack. */
static int push(struct counter *c, int fd, const char *name,
		const struct de__st *st)
{
	struct frame *f;
	uint64_t n0, t0;
	int rc;

	if (c->depth == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;

		if (!(f = realloc(c->stack, cap * sizeof(*f))))
			return -ENOMEM;
		c->stack = f;
		c->cap = cap;
	}
	f = &c->stack[c->depth++];
	memset(f, 0, sizeof(*f));
	f->dev = st->dev;
	f->ino = st->ino;
	n0 = c->n;
	t0 = de__now_ns();
	rc = de__read_dir(c->ctx, fd, name, c->buf, 0, count_ent, c);
	/* The count reads first, so its reads are the ones that tell a slow
	 * disk (DE_SCHED_AUTO): the run after it finds them cached. */
	if (rc == 0)
		de__note_read(c->ctx, st->dev, de__now_ns() - t0, c->n - n0);
	tick(c);
	return rc == -ENOMEM ? rc : 0;
}

/* Leave the top frame, whose directory is fd (closed here), for its
 * parent, through "..".  Returns the parent's fd, or -1 at the top, or
 * when the parent is gone or no longer where it was. */
static int pop(struct counter *c, int fd)
{
	struct de__st st;
	int up = -1;

	free(c->stack[--c->depth].names);
	if (c->depth)
		up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
	close(fd);
	if (up >= 0 && (de__fstat(c->ctx, up, "..", &st) ||
			st.dev != c->stack[c->depth - 1].dev ||
			st.ino != c->stack[c->depth - 1].ino)) {
		close(up);
		up = -1;
	}
	return up;
}

/* Open name of dirfd as a directory to enter: on the file system
 * counted, no mount point.  Its identity in *st; -1 when not. */
static int enter(struct counter *c, int dirfd, const char *name,
		 struct de__st *st)
{
	int fd = de__open_dir(c->ctx, dirfd, name);

	if (fd >= 0 && (de__fstat(c->ctx, fd, name, st) || st->dev != c->dev ||
			st->mount_root == 1)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Count what is below directory name of dirfd (not name itself), depth
 * first, holding the fd of the directory on top of the stack (and for a
 * moment its child's or parent's). */
static int count_tree(struct counter *c, int dirfd, const char *name)
{
	struct de__st st;
	int fd = enter(c, dirfd, name, &st), rc = 0;

	if (fd < 0)
		return 0;
	if ((rc = push(c, fd, name, &st)) != 0)
		goto out;
	while (fd >= 0 && !c->cancelled) {
		struct frame *f = &c->stack[c->depth - 1];
		const char *sub;
		int child;

		if (f->next == f->used) {
			/* Gone or moved: the count stops short. */
			fd = pop(c, fd);
			continue;
		}
		sub = f->names + f->next;
		f->next += strlen(sub) + 1;
		if ((child = enter(c, fd, sub, &st)) < 0)
			continue;
		close(fd);
		fd = child;
		if ((rc = push(c, fd, sub, &st)) != 0)
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	while (c->depth)
		free(c->stack[--c->depth].names);
	return rc;
}

/* One target of a set: itself, and what is below it. */
static int count_target(struct counter *c, int dirfd,
			const struct de_target *t)
{
	enum de_type type = t->type;
	struct de__st st;

	if (type == DE_T_UNKNOWN && de__lstatat(c->ctx, dirfd, t->name, &st) == 0)
		type = de_type_of_mode(st.mode);
	c->n++;
	return type == DE_T_DIR ? count_tree(c, dirfd, t->name) : 0;
}

/* See delete_engine.h. */
int de_count(de_ctx *ctx, const struct de_set *sets, size_t n,
	     const struct de_hooks *hooks, uint64_t *count)
{
	struct counter c = { .ctx = ctx, .hooks = hooks };
	size_t i, j;
	int rc = 0;

	if (!ctx || !count || (n && !sets))
		return -EINVAL;
	*count = 0;
	if (!(c.buf = malloc(DE__BUFSZ)))
		return -ENOMEM;
	c.t0_ms = c.last_ms = de__now_ms();
	for (i = 0; i < n && !rc && !c.cancelled; i++) {
		struct de__st st;

		if (sets[i].dirfd < 0 || (sets[i].n && !sets[i].targets)) {
			rc = -EINVAL;
			break;
		}
		if (de__fstat(ctx, sets[i].dirfd, "", &st))
			continue;
		c.dev = st.dev;
		for (j = 0; j < sets[i].n && !rc && !c.cancelled; j++)
			rc = count_target(&c, sets[i].dirfd, &sets[i].targets[j]);
	}
	free(c.stack);
	free(c.buf);
	*count = c.n;
	return rc ? rc : c.cancelled ? -ECANCELED : 0;
}

/*
 * node.c - directories in progress, and the fds they hold.
 *
 * One node per directory in progress (not per file), on the live list.
 * A node holds a reference for itself and one per child directory or
 * unlink chunk still running; whoever drops the last one removes the
 * directory (unlink.c de__node_release).
 *
 * A node's fd is held only while someone pins it, or while it is cached:
 * an fd that no one pins is idle, on one of the idle lists (most
 * recently unpinned first; list 1 holds those whose children still have
 * to open themselves from them, the unopened ones).  The fd of a dead
 * node (no references left) is closed when it is unpinned.  When more
 * than ctx->fd_budget fds are held, an unpin closes the least recently
 * used idle fd of list 0, and of list 1 only past twice the budget (or
 * under EMFILE, de__shed_fd).  Least recently used, not the one just
 * unpinned: a walk along a chain deeper than the budget then finds the
 * directories it is in and the ones it comes back to still held.
 * Closing the one just unpinned, and reopening from the nearest held
 * ancestor, made every caller quadratic in the depth of a chain under a
 * small RLIMIT_NOFILE (test/deep_lowfd.c).
 *
 * A closed fd is reopened, with one openat checked against the node's
 * dev/ino, as ".." of the child fd the caller holds, else (on the calling
 * thread) as ".." of a child whose fd is idle; failing both, by walking
 * down from the nearest held ancestor with the same check at every step,
 * like fts.  The root (the caller's dirfd) is never closed, nor put on an
 * idle list.
 *
 * The tree lock (ctx->mu) protects the live list, the idle lists and
 * each node's fd, pins, idle, unopened and refs.  A node pinned by
 * raising pins directly (walk.c serial_dir, unlink.c split_files) may stay
 * on an idle list until it is unpinned: whoever takes one from a list
 * checks that it still holds an fd and has no pin.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Wake the calling thread if it sleeps.  Tree lock held. */
void de__wake(de_ctx *ctx)
{
	if (ctx->run.waiting)
		pthread_cond_signal(&ctx->cv);
}

/*
 * A node's state changed: wake the calling thread if it may be waiting
 * for that.  Tree lock held.  Only the ordered walk waits for the states
 * of single nodes; the unordered emitter waits for events (ev_push) and
 * for the root to be final, and is woken for those alone: waking it at
 * every state change cost several context switches per directory.
 */
void de__signal(de_ctx *ctx)
{
	if (de__ordered(ctx))
		de__wake(ctx);
}

/* A new node for directory name in parent.  Returns NULL on ENOMEM. */
struct de__node *de__node_new(de_ctx *ctx, struct de__node *parent,
			      const char *name, size_t len, uint64_t ino)
{
	struct de__node *n = calloc(1, sizeof(*n) + len + 1);

	if (!n)
		return NULL;
	memcpy(n->name, name, len);
	n->namelen = len;
	n->ctx = ctx;
	n->parent = parent;
	n->fd = -1;
	n->cnt.refs = 1;
	n->state = NS_NEW;
	n->ino = (ino_t)ino;
	if (parent) {
		n->dev = parent->dev;
		n->fstype = parent->fstype;
		n->depth = parent->depth + 1;
		n->pathlen = (parent->pathlen ? parent->pathlen + 1 : 0) + len;
		n->set = parent->set;
	}
	de__lock(ctx);
	DLIST_PUSH(ctx->run.tree.live, n, links.lnext, links.lprev);
	ctx->run.rep.prog.dirs_pending++;
	de__unlock(ctx);
	return n;
}

/* Take n off the idle list it is on, if any.  Tree lock held. */
static void idle_del(de_ctx *ctx, struct de__node *n)
{
	int l = n->links.idle - 1;

	if (l < 0)
		return;
	if (n->links.iprev)
		n->links.iprev->links.inext = n->links.inext;
	else
		ctx->run.tree.idle[l] = n->links.inext;
	if (n->links.inext)
		n->links.inext->links.iprev = n->links.iprev;
	else
		ctx->run.tree.idle_tail[l] = n->links.iprev;
	n->links.inext = n->links.iprev = NULL;
	n->links.idle = 0;
}

/* Put n first (most recently used) on idle list l.  Tree lock held. */
static void idle_push(de_ctx *ctx, struct de__node *n, int l)
{
	n->links.iprev = NULL;
	n->links.inext = ctx->run.tree.idle[l];
	if (n->links.inext)
		n->links.inext->links.iprev = n;
	else
		ctx->run.tree.idle_tail[l] = n;
	ctx->run.tree.idle[l] = n;
	n->links.idle = l + 1;
}

/*
 * The idle fd to close: the least recently used of list 0, or with any
 * set of list 1 when list 0 has none.  A node on list 0 that has
 * children to open by now (made while it was idle) moves to list 1; one
 * pinned meanwhile leaves its list.  Returns the node, off its list, or
 * NULL.  Tree lock held.  Each node is looked at once per stay on a
 * list, so this is constant time amortized.
 */
static struct de__node *idle_victim(de_ctx *ctx, int any)
{
	struct de__node *n;

	while ((n = ctx->run.tree.idle_tail[0])) {
		idle_del(ctx, n);
		if (n->fd < 0 || n->cnt.pins)
			continue;
		if (n->cnt.unopened == 0)
			return n;
		idle_push(ctx, n, 1);
	}
	while (any && (n = ctx->run.tree.idle_tail[1])) {
		idle_del(ctx, n);
		if (n->fd >= 0 && n->cnt.pins == 0)
			return n;
	}
	return NULL;
}

/* Unlink n from the live list and free it.  No worker may still use n. */
void de__node_free(de_ctx *ctx, struct de__node *n)
{
	int fd = -1;

	de__lock(ctx);
	/* A pin outlived by its node was never dropped.  A root's and a
	 * set's directory's fds are the caller's. */
	DE__ASSERT(!n->parent || n->fl.base || n->cnt.pins == 0);
	DLIST_DEL(ctx->run.tree.live, n, links.lnext, links.lprev);
	if (n->fl.inwin)
		ctx->run.tree.win_live--;
	ctx->run.rep.prog.dirs_pending--;
	idle_del(ctx, n);
	if (n->fd >= 0 && n->parent && !n->fl.base) {
		fd = n->fd;
		ctx->run.tree.nfds--;
	}
	de__unlock(ctx);
	if (fd >= 0)
		close(fd);
	free(n->ls.ents);
	free(n->ls.arena);
	free(n);
}

/*
 * Whether fd is directory n again.  n->ino is fstat's by now (scan.c de__scan),
 * never a d_ino, so this holds where d_ino is meaningless too.  On FUSE
 * without use_ino, st_ino is the node id, which stays while the kernel
 * keeps the inode (an open child pins its parent): a reopen by name after
 * the kernel evicted it gets a new id and fails with ESTALE, safely.
 */
static int verify_fd(int fd, const struct de__node *n)
{
	struct stat sb;

	if (fstat(fd, &sb))
		return -errno;
	if (sb.st_dev != n->dev || sb.st_ino != n->ino)
		return -ESTALE;
	return 0;
}

/*
 * Reopen n, whose fd was closed, as ".." of cfd, an open fd of a child
 * of n.  Returns the fd, checked against n's dev/ino, or a negative
 * errno (-ESTALE: the child is no longer in n).
 */
static int reopen_up(de_ctx *ctx, struct de__node *n, int cfd)
{
	int fd = de__reopen_dir(ctx, cfd, ".."), rc;

	if (fd < 0)
		return fd;
	rc = verify_fd(fd, n);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/*
 * Reopen n as ".." of a child whose fd is idle (pinned for the while).
 * A walk coming back up a chain finds the directory below still held
 * where the one it is in was closed.  The idle lists hold about twice the
 * fd budget at most, so the search costs less than the reopen it saves.
 * On the calling thread only: it alone frees nodes (emit.c), and a pin
 * does not keep a child from being freed, as a reference keeps a parent.
 * Returns the fd or a negative errno (-ENOENT: no such child).
 */
static int reopen_from_child(de_ctx *ctx, struct de__node *n)
{
	struct de__node *c = NULL;
	int l, cfd = -1, fd;

	if (!de__is_caller(ctx))
		return -ENOENT;
	de__lock(ctx);
	for (l = 0; l < 2 && !c; l++)
		for (c = ctx->run.tree.idle[l]; c; c = c->links.inext)
			if (c->parent == n && c->fd >= 0)
				break;
	if (c) {
		idle_del(ctx, c);
		c->cnt.pins++;
		cfd = c->fd;
	}
	de__unlock(ctx);
	if (!c)
		return -ENOENT;
	fd = reopen_up(ctx, n, cfd);
	de__node_unpin(ctx, c);
	return fd;
}

/*
 * Pin n's fd, reopening it if it was closed.  childfd, when >= 0, is an
 * open fd of a child of n, whose ".." is tried first.  Returns the fd
 * (valid until de__node_unpin) or a negative errno.
 */
int de__node_pin(de_ctx *ctx, struct de__node *n, int childfd)
{
	int fd = -1, extra = -1, rc;

	de__lock(ctx);
	if (n->fd >= 0) {
		idle_del(ctx, n);
		n->cnt.pins++;
		fd = n->fd;
		de__unlock(ctx);
		return fd;
	}
	de__unlock(ctx);
	/* Under EMFILE, shedding an idle fd (or waiting for one) beats the
	 * walk down below, which needs one fd more: an ancestor's, pinned,
	 * beside this child's. */
	if (childfd >= 0)
		fd = reopen_up(ctx, n, childfd);
	if (fd < 0 && n->parent)
		fd = reopen_from_child(ctx, n);
	if (fd < 0) {
		int pfd;

		if (!n->parent)
			return -EBADF;
		pfd = de__node_pin(ctx, n->parent, -1);
		if (pfd < 0)
			return pfd;
		fd = de__reopen_dir(ctx, pfd, n->name);
		rc = fd < 0 ? fd : 0;
		de__node_unpin(ctx, n->parent);
		if (rc)
			return rc;
		rc = verify_fd(fd, n);
		if (rc) {
			close(fd);
			return rc;
		}
	}
	de__lock(ctx);
	if (n->fd >= 0) {
		idle_del(ctx, n);
		extra = fd;
		fd = n->fd;
	} else {
		n->fd = fd;
		ctx->run.tree.nfds++;
	}
	n->cnt.pins++;
	de__unlock(ctx);
	if (extra >= 0)
		close(extra);
	return fd;
}

/*
 * Close one held fd that no one has pinned (never the root's), the least
 * recently used, to make room under EMFILE.  Returns 1 if it closed one.
 */
int de__shed_fd(de_ctx *ctx)
{
	struct de__node *n;
	int fd = -1;

	de__lock(ctx);
	n = idle_victim(ctx, 1);
	if (n) {
		fd = n->fd;
		n->fd = -1;
		ctx->run.tree.nfds--;
	}
	de__unlock(ctx);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * Drop a pin with the tree lock held.  An fd no longer pinned is cached
 * (idle), unless n is dead; over budget, the least recently used idle fd
 * goes.  Returns an fd the caller must close after unlocking (n's when n
 * is dead, else maybe another node's), or -1.
 */
int de__unpin_locked(de_ctx *ctx, struct de__node *n)
{
	struct de__node *v = n;
	int fd;

	DE__ASSERT(n->cnt.pins > 0);
	if (--n->cnt.pins > 0 || n->fd < 0 || !n->parent || n->fl.base)
		return -1;
	idle_del(ctx, n);
	if (n->cnt.refs > 0) {
		idle_push(ctx, n, n->cnt.unopened > 0);
		if (ctx->run.tree.nfds <= ctx->fd_budget)
			return -1;
		v = idle_victim(ctx, ctx->run.tree.nfds > 2 * ctx->fd_budget);
		if (!v)
			return -1;
	}
	fd = v->fd;
	v->fd = -1;
	ctx->run.tree.nfds--;
	return fd;
}

/* Drop a pin; close n's fd when n is dead, or the least recently used
 * idle fd when fds are over budget. */
void de__node_unpin(de_ctx *ctx, struct de__node *n)
{
	int fd;

	de__lock(ctx);
	fd = de__unpin_locked(ctx, n);
	de__unlock(ctx);
	if (fd >= 0)
		close(fd);
}

/* Pin n (de__node_pin) as a value: held, or not with the errno. */
struct de__pin de__pin_take(de_ctx *ctx, struct de__node *n, int childfd)
{
	struct de__pin p = { NULL, de__node_pin(ctx, n, childfd) };

	if (p.fd >= 0)
		p.n = n;
	return p;
}

/* End pin p, held. */
void de__pin_drop(de_ctx *ctx, struct de__pin *p)
{
	DE__ASSERT(p->n);
	if (p->n)
		de__node_unpin(ctx, p->n);
	*p = DE__NO_PIN;
}

/* de__pin_drop() with the tree lock held: returns an fd for the caller
 * to close once it lets the lock go, or -1. */
int de__pin_drop_locked(de_ctx *ctx, struct de__pin *p)
{
	int fd = -1;

	DE__ASSERT(p->n);
	if (p->n)
		fd = de__unpin_locked(ctx, p->n);
	*p = DE__NO_PIN;
	return fd;
}

/*
 * See internal.h.  Incremental: pbuf already starts with the path of pbuf_node, the node
 * whose path was built last, so only the part below the deepest common
 * ancestor of the two is written.  Reports come a directory at a time,
 * from parent to child or child to parent, so that is one name, where
 * building each path from the root would cost O(depth) per directory.
 */
long de__node_path(de_ctx *ctx, const struct de__node *n, size_t extra)
{
	const struct de__node *a = ctx->run.rep.pbuf_node, *b = n, *m;
	size_t len = n->pathlen, pos;

	if (len + extra + 2 > ctx->pcap) {
		size_t cap = (len + extra + 2) * 2;
		char *p = realloc(ctx->pbuf, cap < 4096 ? 4096 : cap);

		if (!p)
			return -1;
		ctx->pbuf = p;
		ctx->pcap = cap < 4096 ? 4096 : cap;
	}
	/* The deepest common ancestor of n and pbuf_node (NULL: none known,
	 * start from the root, whose path is empty). */
	if (a) {
		while (a->depth > b->depth)
			a = a->parent;
		while (b->depth > a->depth)
			b = b->parent;
		while (a != b) {
			a = a->parent;
			b = b->parent;
		}
	}
	pos = len;
	ctx->pbuf[pos] = 0;
	for (m = n; m != a && m->parent; m = m->parent) {
		pos -= m->namelen;
		memcpy(ctx->pbuf + pos, m->name, m->namelen);
		if (pos)
			ctx->pbuf[--pos] = '/';
	}
	ctx->run.rep.pbuf_node = n;
	return (long)len;
}

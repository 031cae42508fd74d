/*
 * node.c - directories in progress, and the fds they hold.
 *
 * One node per directory in progress (not per file), on the live list.
 * A node holds a reference for itself and one per child directory or
 * unlink chunk still running; whoever drops the last one removes the
 * directory (sched.c de__node_release).
 *
 * A node's fd is held only while someone pins it.  When more than
 * ctx->fd_budget fds are held, an unpinned fd is closed, unless children
 * still have to open themselves from it.  A closed fd is reopened either
 * as ".." of a pinned child (one openat, checked against the node's
 * dev/ino) or by walking down from the nearest held ancestor with the
 * same check at every step, like fts.  The root (the caller's dirfd) is
 * never closed.
 *
 * The tree lock (ctx->mu) protects the live list and each node's fd,
 * pins, unopened and refs.
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
	if (ctx->run.ordered)
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
	n->refs = 1;
	n->state = NS_NEW;
	n->ino = (ino_t)ino;
	if (parent) {
		n->dev = parent->dev;
		n->fstype = parent->fstype;
		n->depth = parent->depth + 1;
		n->pathlen = (parent->pathlen ? parent->pathlen + 1 : 0) + len;
	}
	de__lock(ctx);
	DLIST_PUSH(ctx->run.live, n, lnext, lprev);
	ctx->run.prog.dirs_pending++;
	de__unlock(ctx);
	return n;
}

/* Unlink n from the live list and free it.  No worker may still use n. */
void de__node_free(de_ctx *ctx, struct de__node *n)
{
	int fd = -1;

	de__lock(ctx);
	DLIST_DEL(ctx->run.live, n, lnext, lprev);
	if (n->inwin)
		ctx->run.win_live--;
	ctx->run.prog.dirs_pending--;
	if (n->fd >= 0 && n->parent) {
		fd = n->fd;
		ctx->run.nfds--;
	}
	de__unlock(ctx);
	if (fd >= 0)
		close(fd);
	free(n->ents);
	free(n->arena);
	free(n);
}


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
 * Pin n's fd, reopening it if it was closed.  childfd, when >= 0, is an
 * open fd of a child of n, whose ".." is tried first.  Returns the fd
 * (valid until de__node_unpin) or a negative errno.
 */
int de__node_pin(de_ctx *ctx, struct de__node *n, int childfd)
{
	int fd = -1, extra = -1, rc;

	de__lock(ctx);
	if (n->fd >= 0) {
		n->pins++;
		fd = n->fd;
		de__unlock(ctx);
		return fd;
	}
	de__unlock(ctx);
	if (childfd >= 0) {
		/* Under EMFILE, shedding an idle fd (or waiting for
		 * one) beats the walk down below, which needs one fd more:
		 * an ancestor's, pinned, beside this child's. */
		fd = de__reopen_dir(ctx, childfd, "..");
		if (fd >= 0 && verify_fd(fd, n)) {
			close(fd);
			fd = -1;
		}
	}
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
		extra = fd;
		fd = n->fd;
	} else {
		n->fd = fd;
		ctx->run.nfds++;
	}
	n->pins++;
	de__unlock(ctx);
	if (extra >= 0)
		close(extra);
	return fd;
}

/*
 * Close one held fd that no one has pinned (never the root's), to make
 * room under EMFILE.  Returns 1 if it closed one.
 */
int de__shed_fd(de_ctx *ctx)
{
	struct de__node *n;
	int fd = -1;

	de__lock(ctx);
	for (n = ctx->run.live; n; n = n->lnext)
		if (n->fd >= 0 && n->pins == 0 && n->parent) {
			fd = n->fd;
			n->fd = -1;
			ctx->run.nfds--;
			break;
		}
	de__unlock(ctx);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * Drop a pin with the tree lock held.  Returns an fd the caller must
 * close after unlocking (n is dead or fds are over budget), or -1.
 */
int de__unpin_locked(de_ctx *ctx, struct de__node *n)
{
	int fd = -1;

	if (--n->pins == 0 && n->fd >= 0 && n->parent &&
	    (n->refs == 0 ||
	     (ctx->run.nfds > ctx->fd_budget &&
	      (n->unopened == 0 || ctx->run.nfds > 2 * ctx->fd_budget)))) {
		fd = n->fd;
		n->fd = -1;
		ctx->run.nfds--;
	}
	return fd;
}

/* Drop a pin; close the fd when n is dead or fds are over budget. */
void de__node_unpin(de_ctx *ctx, struct de__node *n)
{
	int fd;

	de__lock(ctx);
	fd = de__unpin_locked(ctx, n);
	de__unlock(ctx);
	if (fd >= 0)
		close(fd);
}


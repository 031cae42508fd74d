/*
 * tree.c - directories in progress: open, scan, unlink, rmdir.
 *
 * One node per directory in progress (not per file).  A node holds a
 * reference for itself and one per child directory or unlink chunk still
 * running; whoever drops the last reference removes the directory from its
 * parent and drops the parent's reference (the last child removes the
 * parent), iteratively, so a 10,000-level chain unwinds without recursion.
 *
 * File descriptors: a node's fd is held only while someone pins it.  When
 * more than ctx->fd_budget fds are held, an unpinned fd is closed, unless
 * children still have to open themselves from it.  A closed fd is reopened
 * either as ".." of a pinned child (one openat, checked against the node's
 * dev/ino) or by walking down from the nearest held ancestor with the same
 * check at every step, like fts.  The root (the caller's dirfd) is never
 * closed.
 *
 * Tree lock (ctx->mu) protects node fd/pins/unopened/refs/kept/state, the
 * live list, the deferred stack, the event queue and ctx counters.  Fields
 * written once by the scanning thread before the node's state is published
 * under the lock (listing, dev, ino) are read without it afterwards.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The node and event lists, all under the tree lock, named by their link
 * fields: the live list and the deferred stack are doubly linked (pushed
 * at the head, unlinked from anywhere), the event and ready queues are
 * FIFOs (appended at the tail).
 */
#define DLIST_PUSH(head, e, next, prev) do {				\
	(e)->prev = NULL;						\
	(e)->next = (head);						\
	if (head)							\
		(head)->prev = (e);					\
	(head) = (e);							\
} while (0)

#define DLIST_DEL(head, e, next, prev) do {				\
	if ((e)->prev)							\
		(e)->prev->next = (e)->next;				\
	else								\
		(head) = (e)->next;					\
	if ((e)->next)							\
		(e)->next->prev = (e)->prev;				\
} while (0)

#define FIFO_APPEND(head, tail, e, next) do {				\
	(e)->next = NULL;						\
	if (tail)							\
		(tail)->next = (e);					\
	else								\
		(head) = (e);						\
	(tail) = (e);							\
} while (0)

static void lock(de_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mu);
}

static void unlock(de_ctx *ctx)
{
	pthread_mutex_unlock(&ctx->mu);
}

/* Wake the calling thread if it sleeps.  Tree lock held. */
static void wake(de_ctx *ctx)
{
	if (ctx->waiting)
		pthread_cond_signal(&ctx->cv);
}

/*
 * A node's state changed: wake the calling thread if it may be waiting
 * for that.  Tree lock held.  Only the ordered walk waits for the states
 * of single nodes; the unordered emitter waits for events (ev_push) and
 * for the root to be final, and is woken for those alone.  Waking it at
 * every state change cost about 8 context switches per directory (16,700
 * for de-rm on deep 2000x50, against 281 for rm -rf; perf record -e
 * sched:sched_switch: the calling thread's cond_timedwait, then its
 * mutex re-lock, half each).
 */
void de__signal(de_ctx *ctx)
{
	if (ctx->ordered)
		wake(ctx);
}

/*
 * Queue an event for the unordered emitter.  Tree lock held.  The emitter
 * is woken once per EV_WAKE_EVENTS events or EV_WAKE_ENTS listed entries
 * (what its queued listings hold, so the memory they keep stays
 * bounded), not per event; it also wakes at every progress tick and when
 * the root is final, so reports are late by at most progress_ms, and
 * only reports: removal never waits for the emitter.
 */
#define EV_WAKE_EVENTS	64u
#define EV_WAKE_ENTS	16384u

static void ev_push(de_ctx *ctx, struct de__node *n, int kind)
{
	struct de__ev *ev = kind == DE__EV_FILES ? &n->ev_files : &n->ev_self;

	ev->node = n;
	ev->kind = kind;
	FIFO_APPEND(ctx->ev_head, ctx->ev_tail, ev, next);
	ctx->ev_count++;
	if (kind == DE__EV_FILES)
		ctx->ev_ents += n->nents;
	if (ctx->ev_count >= EV_WAKE_EVENTS || ctx->ev_ents >= EV_WAKE_ENTS)
		wake(ctx);
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
	lock(ctx);
	DLIST_PUSH(ctx->live, n, lnext, lprev);
	ctx->prog.dirs_pending++;
	unlock(ctx);
	return n;
}

/* Unlink n from the live list and free it.  No worker may still use n. */
void de__node_free(de_ctx *ctx, struct de__node *n)
{
	int fd = -1;

	lock(ctx);
	DLIST_DEL(ctx->live, n, lnext, lprev);
	if (n->inwin)
		ctx->win_live--;
	ctx->prog.dirs_pending--;
	if (n->fd >= 0 && n->parent) {
		fd = n->fd;
		ctx->nfds--;
	}
	unlock(ctx);
	if (fd >= 0)
		close(fd);
	free(n->ents);
	free(n->arena);
	free(n);
}

/* Append one listing entry.  Returns 0 or -ENOMEM. */
int de__add_ent(struct de__node *n, const char *name, size_t len,
		uint64_t ino, enum de_type type)
{
	struct de__ent *e;

	if (n->nents == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 64;
		void *p = realloc(n->ents, cap * sizeof(*n->ents));

		if (!p)
			return -ENOMEM;
		n->ents = p;
		n->cap = cap;
	}
	if (n->alen + len + 1 > n->acap || n->alen + len + 1 > UINT32_MAX) {
		size_t cap = n->acap ? n->acap * 2 : 4096;
		void *p;

		while (cap < n->alen + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -ENOMEM;
		p = realloc(n->arena, cap);
		if (!p)
			return -ENOMEM;
		n->arena = p;
		n->acap = cap;
	}
	e = &n->ents[n->nents++];
	memset(e, 0, sizeof(*e));
	e->name = (uint32_t)n->alen;
	e->len = (uint16_t)len;
	e->type = (uint8_t)type;
	e->ino = ino;
	memcpy(n->arena + n->alen, name, len);
	n->arena[n->alen + len] = 0;
	n->alen += len + 1;
	return 0;
}

/*
 * Whether fd is directory n again.  n->ino is fstat's by now (de__scan),
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
 * Pin n's fd, reopening it if it was closed.  childfd, when >= 0, is an
 * open fd of a child of n, whose ".." is tried first.  Returns the fd
 * (valid until de__node_unpin) or a negative errno.
 */
int de__node_pin(de_ctx *ctx, struct de__node *n, int childfd)
{
	int fd = -1, extra = -1, rc;

	lock(ctx);
	if (n->fd >= 0) {
		n->pins++;
		fd = n->fd;
		unlock(ctx);
		return fd;
	}
	unlock(ctx);
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
	lock(ctx);
	if (n->fd >= 0) {
		extra = fd;
		fd = n->fd;
	} else {
		n->fd = fd;
		ctx->nfds++;
	}
	n->pins++;
	unlock(ctx);
	if (extra >= 0)
		close(extra);
	return fd;
}

/*
 * Remove name under dfd (unlinkat with flags), after its slot of
 * de_config.rate when pace is set.  Counts it for progress; on the calling
 * thread, which sometimes runs a directory's task itself (run.c
 * need_scanned(), deferred scans), every 64th removal also lets the run
 * deliver progress (ctx->tick): the progress hook is how the caller sends
 * keep-alives, and must not wait until a huge or rate-limited directory
 * is done (seen: a 7 s paced delete made no progress call until its end,
 * and a remote --timeout=2 run died).  Returns 0 or a negative errno.
 */
int de__remove_at(de_ctx *ctx, int dfd, const char *name, int flags,
		  int pace)
{
	int rc;

	if (pace)
		de__pace(ctx);
	rc = de__unlinkat(ctx, dfd, name, flags);
	if (rc)
		return rc;
	__atomic_add_fetch(&ctx->unlinked, 1, __ATOMIC_RELAXED);
	/* Only the calling thread touches caller_ticks; it reads the clock
	 * once per 64 of its removals, not per file. */
	if (pthread_equal(pthread_self(), ctx->caller) &&
	    (++ctx->caller_ticks & 63) == 0)
		ctx->tick(ctx);
	return 0;
}

/*
 * Close one held fd that no one has pinned (never the root's), to make
 * room under EMFILE.  Returns 1 if it closed one.
 */
int de__shed_fd(de_ctx *ctx)
{
	struct de__node *n;
	int fd = -1;

	lock(ctx);
	for (n = ctx->live; n; n = n->lnext)
		if (n->fd >= 0 && n->pins == 0 && n->parent) {
			fd = n->fd;
			n->fd = -1;
			ctx->nfds--;
			break;
		}
	unlock(ctx);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * Drop a pin with the tree lock held.  Returns an fd the caller must
 * close after unlocking (n is dead or fds are over budget), or -1.
 */
static int unpin_locked(de_ctx *ctx, struct de__node *n)
{
	int fd = -1;

	if (--n->pins == 0 && n->fd >= 0 && n->parent &&
	    (n->refs == 0 ||
	     (ctx->nfds > ctx->fd_budget &&
	      (n->unopened == 0 || ctx->nfds > 2 * ctx->fd_budget)))) {
		fd = n->fd;
		n->fd = -1;
		ctx->nfds--;
	}
	return fd;
}

/* Drop a pin; close the fd when n is dead or fds are over budget. */
void de__node_unpin(de_ctx *ctx, struct de__node *n)
{
	int fd;

	lock(ctx);
	fd = unpin_locked(ctx, n);
	unlock(ctx);
	if (fd >= 0)
		close(fd);
}

static void skip(struct de__node *n, int res, int op, int err)
{
	n->skip_scan = 1;
	n->res = (uint8_t)res;
	n->op = (uint8_t)op;
	n->err = err;
}

/*
 * n is not entered: reaching, opening or reading it failed with rc at op.
 * ENOENT means another process removed it (or moved it, or an ancestor,
 * out of the tree) after its parent was listed: it vanished, as stock
 * rsync counts a name gone between its listing and its lstat, and its
 * parent may still be removed.  Anything else is a failure.
 */
static void skip_err(struct de__node *n, int op, int rc)
{
	if (rc == -ENOENT)
		skip(n, DE_R_VANISHED, 0, 0);
	else
		skip(n, DE_R_FAILED, op, -rc);
}

static int add_cb(void *arg, const char *name, size_t len, uint64_t ino,
		  enum de_type t)
{
	return de__add_ent(arg, name, len, ino, t);
}

/*
 * DE_F_MAKE_WRITABLE: give directory fd (mode, owner uid) u+w when it is
 * ours and not writable, as rsync does before it empties one
 * (delete_dir_contents()), so that its entries can be unlinked.  Only
 * the write bit: a directory we may not read or search stays an error,
 * as in rsync, rather than being opened up and emptied (as non-root,
 * stock leaves a mode-000 directory and says why).  A failed chmod is not
 * reported: the unlinks that need it fail and say so.
 */
static void make_writable(de_ctx *ctx, struct de__node *n, int fd,
			  const struct de__st *st)
{
	unsigned flags = ctx->flags;

	if (!(flags & DE_F_MAKE_WRITABLE) || (flags & DE_F_DRY_RUN) ||
	    st->uid != geteuid() || (st->mode & S_IWUSR))
		return;
	if (!de__fault(ctx, DE_OP_CHMOD, n->name))
		(void)fchmod(fd, (st->mode | S_IWUSR) & 07777);
}

/*
 * Open, check and read directory n (never the root).  Afterwards either
 * n->skip_scan is set (res/op/err say why it is not entered) or n's listing
 * is complete, typed, and sorted canonically when ordered.  Returns 1 when
 * n is left pinned (only with keep_pin), else 0.  Sets NS_SCANNED; in hook
 * mode, a node it cannot enter is then finished here too (NS_FINAL, and n
 * may be freed by the time this returns 0).
 */
int de__scan(de_ctx *ctx, struct de__node *n, void *buf, int keep_pin)
{
	struct de__node *p = n->parent;
	unsigned flags = ctx->cfg.flags;
	struct de__st st;
	int pfd, fd, rc, pinned = 0, by_name = 0, subvol, finish;
	ino_t dino;
	size_t i;

	if (de__cancelled(ctx)) {
		skip(n, DE_R_SKIPPED, 0, 0);
		lock(ctx);
		p->unopened--;
		unlock(ctx);
		goto out;
	}
	pfd = de__node_pin(ctx, p, -1);
	if (pfd < 0) {
		lock(ctx);
		p->unopened--;
		unlock(ctx);
		skip_err(n, DE_OP_OPEN, pfd);
		goto out;
	}
	/*
	 * Where readdir's d_ino is not stat's inode number (policy.c
	 * de__dino_is_stat; sshfs lists every entry as 0xffffffff), the
	 * identity the open is checked against below is an lstat of the name
	 * just before the open, as fts checks its own lstat: a directory
	 * swapped in between is still caught, and so is a symlink (by
	 * O_NOFOLLOW).  Failing that lstat fails the open.
	 */
	dino = n->ino;
	fd = 0;
	if (!de__dino_is_stat(n->fstype) &&
	    (fd = de__lstatat(ctx, pfd, n->name, &st)) == 0) {
		n->ino = st.ino;
		by_name = 1;
	}
	if (fd == 0)
		fd = de__open_dir(ctx, pfd, n->name);
	lock(ctx);
	p->unopened--;
	if (fd >= 0) {
		n->fd = fd;
		n->pins = 1;
		ctx->nfds++;
	}
	unlock(ctx);
	de__node_unpin(ctx, p);
	if (fd < 0) {
		skip_err(n, DE_OP_OPEN, fd);
		goto out;
	}
	pinned = 1;
	rc = de__fstat(ctx, fd, n->name, &st);
	if (rc) {
		skip(n, DE_R_FAILED, DE_OP_STAT, -rc);
		goto out;
	}
	n->mode = st.mode;
	if ((flags & DE_F_ONE_FILE_SYSTEM) && st.dev != ctx->start_dev) {
		skip(n, DE_R_OTHER_FS, 0, 0);
		goto out;
	}
	/*
	 * A mount point is never entered.  A new device number alone does
	 * not make one where statx can tell (STATX_ATTR_MOUNT_ROOT): a btrfs
	 * subvolume has its own but is no mount, and rm -rf and stock rsync
	 * delete it (root may rmdir an empty one).  -x kept it above.
	 */
	subvol = st.dev != p->dev && st.mount_root == 0;
	if (st.mount_root == 1 || (st.dev != p->dev && !subvol)) {
		skip(n, DE_R_MOUNT, 0, 0);
		goto out;
	}
	/*
	 * The directory we opened must be the one we listed (or lstat saw).
	 * A d_ino also tells a same-device bind mount (it is the covered
	 * directory's), and an lstat crosses the mount as the open does: so
	 * where STATX_ATTR_MOUNT_ROOT is unknown (Linux before 5.8), a
	 * d_ino that differs still refuses the directory, as before the
	 * lstat check (CIFS with serverino lists stat's numbers and passes).
	 * Not on overlayfs, which never had the d_ino check (without xino
	 * its d_ino is the layer's).  A btrfs subvolume's entry gives its
	 * subvolume id as d_ino, which de__subvol_id() checks instead.
	 */
	if ((n->ino && st.ino != n->ino &&
	     !(subvol && de__subvol_id(fd) == n->ino)) ||
	    (by_name && st.mount_root < 0 && dino && dino != st.ino &&
	     !de__dino_from_layer(n->fstype))) {
		skip(n, DE_R_FAILED, DE_OP_OPEN, ESTALE);
		goto out;
	}
	n->dev = st.dev;
	n->ino = st.ino;
	make_writable(ctx, n, fd, &st);
	/* ENOENT here: the directory was removed after we opened it (Linux
	 * refuses to read a dead directory), so whatever it held is gone. */
	rc = de__read_dir(ctx, fd, n->name, buf, add_cb, n);
	if (rc) {
		n->nents = 0;
		skip_err(n, DE_OP_READ, rc);
		goto out;
	}
	for (i = 0; i < n->nents; i++) {
		struct de__ent *e = &n->ents[i];

		if (e->type != DE_T_UNKNOWN)
			continue;
		if (de__lstatat(ctx, fd, de__ent_name(n, e), &st) == 0) {
			e->type = (uint8_t)de_type_of_mode(st.mode);
			e->mode = st.mode;
		}
	}
	if (ctx->ordered)
		de__sort_canonical(ctx, n);
out:
	if (pinned && !keep_pin) {
		de__node_unpin(ctx, n);
		pinned = 0;
	}
	lock(ctx);
	n->state = NS_SCANNED;
	if (ctx->serial)
		ctx->scans_inflight--;
	/*
	 * Hook mode: phase 2 waits for the walk, which calls enter_dir and
	 * then submits it (run.c walk), but the walk enters only the nodes
	 * it can: one that was not entered (a mount point, an open failure,
	 * a directory that vanished) would never become final, and the walk
	 * would wait for it forever (issue 22).  It has no listing to ask
	 * the hook about, so its phase 2 runs here and finishes it at once.
	 * Claimed under the lock that publishes NS_SCANNED, so that
	 * drain_cancel() never starts it a second time.
	 */
	finish = ctx->hookmode && !ctx->serial && n->skip_scan;
	if (finish)
		n->p2sub = 1;
	de__signal(ctx);
	unlock(ctx);
	if (finish) {
		de__phase2(ctx, n, pinned);	/* hands the pin over */
		return 0;
	}
	return pinned;
}

/*
 * Unlink non-directory e of n through fd (n's pinned fd), after its slot
 * of de_config.rate when pace is set, and record the result in e.
 * Returns 1 when e was not removed (the caller marks n kept).  Both
 * schedules remove a file this way: the workers (unlink_range) and the
 * calling thread in a serial run (run.c serial_file).
 */
int de__unlink_ent(de_ctx *ctx, struct de__node *n, int fd,
		   struct de__ent *e, int pace)
{
	int rc = de__remove_at(ctx, fd, de__ent_name(n, e), 0, pace);

	e->res = (uint8_t)de__rm_result(rc, &e->err);
	e->op = e->res == DE_R_FAILED ? DE_OP_UNLINK : 0;
	e->done = 1;
	return e->res == DE_R_FAILED;
}

/*
 * rmdir n, emptied, in its parent, pinning the parent for it (through
 * n's ".." when nfd, n's pinned fd, is >= 0 and the parent's fd was
 * closed).  The parent stays pinned when *ppinned says so, for the caller
 * to unpin.  Returns the result (de__rm_result()), with *op and *err set
 * on failure.  Both schedules remove a directory this
 * way: the last reference (de__node_release) and the calling thread in a
 * serial run (run.c serial_dir).
 */
int de__rmdir_node(de_ctx *ctx, struct de__node *n, int nfd, int *ppinned,
		   int *op, int *err)
{
	int pfd = de__node_pin(ctx, n->parent, nfd), rc, res;

	*ppinned = pfd >= 0;
	rc = pfd < 0 ? pfd : de__remove_at(ctx, pfd, n->name, AT_REMOVEDIR, 1);
	res = de__rm_result(rc, err);
	if (res == DE_R_FAILED)
		*op = DE_OP_RMDIR;
	return res;
}

/*
 * Unlink the listed entries idx[0..k) of n through fd.  idx NULL: there
 * was no memory for an order (de__inode_order()), so every non-directory
 * to delete, in listing order; an allocation failure is not the unlink's
 * error to report.
 */
static void unlink_range(de_ctx *ctx, struct de__node *n, int fd,
			 const uint32_t *idx, size_t k)
{
	int kept = 0;
	size_t i, end = idx ? k : n->nents;

	for (i = 0; i < end; i++) {
		struct de__ent *e = &n->ents[idx ? idx[i] : i];

		if (!idx && (e->type == DE_T_DIR || e->action != DE_A_DELETE ||
			     e->done))
			continue;

		if (de__cancelled(ctx)) {
			e->res = DE_R_SKIPPED;
			kept = 1;
			continue;
		}
		kept |= de__unlink_ent(ctx, n, fd, e, 1);
	}
	if (kept) {
		lock(ctx);
		n->kept = 1;
		unlock(ctx);
	}
}

/* One unlink chunk is done; the last one publishes NS_FILES. */
static void files_done(de_ctx *ctx, struct de__node *n, uint32_t *idx)
{
	int last;

	lock(ctx);
	last = --n->chunks == 0;
	if (last) {
		n->state = NS_FILES;
		if (!ctx->ordered && n->nents)
			ev_push(ctx, n, DE__EV_FILES);
		de__signal(ctx);
	}
	unlock(ctx);
	if (last)
		free(idx);
}

static void chunk_task(struct de__work *w, void *buf)
{
	struct de__chunk *c = (void *)((char *)w - offsetof(struct de__chunk,
							    work));
	struct de__node *n = c->node;
	de_ctx *ctx = n->ctx;
	int fd;

	(void)buf;
	/* The submitter pinned n for us, so its fd is open. */
	lock(ctx);
	fd = n->fd;
	unlock(ctx);
	unlink_range(ctx, n, fd, c->idx + c->start, c->n);
	files_done(ctx, n, c->idx);
	free(c);
	de__node_release(ctx, n, 1);
}

/* Queue or defer the scan of child c.  Tree lock not held. */
void de__schedule(de_ctx *ctx, struct de__node *c)
{
	lock(ctx);
	if (ctx->ordered && ctx->win_live >= ctx->win_max) {
		c->deferred = 1;
		DLIST_PUSH(ctx->deferred, c, dnext, dprev);
		unlock(ctx);
		return;
	}
	c->state = NS_QUEUED;
	if (ctx->ordered) {
		c->inwin = 1;
		ctx->win_live++;
	}
	if (ctx->serial)
		ctx->scans_inflight++;
	c->work.fn = de__task;
	unlock(ctx);
	de__pool_submit(&ctx->pool, &c->work, 1);
}

/*
 * Take c off the deferred list and mark its scan queued, counting it in
 * the look-ahead window when in_window.  The caller holds ctx->mu and
 * runs or submits the scan itself.
 */
void de__undefer(de_ctx *ctx, struct de__node *c, int in_window)
{
	DLIST_DEL(ctx->deferred, c, dnext, dprev);
	c->deferred = 0;
	c->state = NS_QUEUED;
	if (in_window) {
		c->inwin = 1;
		ctx->win_live++;
	}
	if (ctx->serial)
		ctx->scans_inflight++;
}

/* Submit deferred scans while the window has room. */
void de__pump(de_ctx *ctx)
{
	struct de__node *c;

	lock(ctx);
	while ((c = ctx->deferred) && ctx->win_live < ctx->win_max &&
	       !de__cancelled(ctx)) {
		de__undefer(ctx, c, 1);
		c->work.fn = de__task;
		unlock(ctx);
		de__pool_submit(&ctx->pool, &c->work, 0);
		lock(ctx);
	}
	unlock(ctx);
}

/* Create child nodes for n's directories to delete. */
void de__make_children(de_ctx *ctx, struct de__node *n)
{
	size_t i;
	int kept = 0, nkids = 0;

	for (i = 0; i < n->nents; i++) {
		struct de__ent *e = &n->ents[i];
		struct de__node *c;

		if (e->action == DE_A_KEEP) {
			e->res = DE_R_KEPT;
			e->done = 1;
			kept = 1;
			continue;
		}
		if (e->action == DE_A_DONE) {
			e->res = DE_R_DONE;
			e->done = 1;
			continue;
		}
		if (e->type != DE_T_DIR || e->done)
			continue;
		c = de__node_new(ctx, n, de__ent_name(n, e), e->len, e->ino);
		if (!c) {
			e->res = DE_R_FAILED;
			e->op = DE_OP_OPEN;
			e->err = ENOMEM;
			e->done = 1;
			kept = 1;
			continue;
		}
		e->child = c;
		nkids++;
	}
	lock(ctx);
	n->refs += nkids;
	n->unopened += nkids;
	n->kept |= kept;
	unlock(ctx);
}

/* Schedule n's children, last first so the first lands on top. */
static void schedule_children(de_ctx *ctx, struct de__node *n)
{
	size_t i;

	for (i = n->nents; i-- > 0;)
		if (n->ents[i].child)
			de__schedule(ctx, n->ents[i].child);
}

/*
 * Serial modes: create and schedule n's children for prefetching; the
 * emitter removes entries itself.
 */
void de__prepare_serial(de_ctx *ctx, struct de__node *n)
{
	de__make_children(ctx, n);
	schedule_children(ctx, n);
}

/* Phase 2 of n has begun: one unlink chunk (its own) pending. */
static void p2_begin(de_ctx *ctx, struct de__node *n)
{
	lock(ctx);
	n->p2sub = 1;
	n->state = NS_P2;
	n->chunks = 1;
	de__signal(ctx);
	unlock(ctx);
}

/*
 * n's fd cannot be had (fd, a negative errno): its fd was closed for the
 * budget and n is gone when reopened, so are its files (ENOENT), or
 * they fail.
 */
static void unreachable_files(de_ctx *ctx, struct de__node *n, int fd)
{
	int res = fd == -ENOENT ? DE_R_VANISHED : DE_R_FAILED;
	size_t i;

	for (i = 0; i < n->nents; i++) {
		struct de__ent *e = &n->ents[i];

		if (e->type == DE_T_DIR || e->done || e->action != DE_A_DELETE)
			continue;
		e->res = (uint8_t)res;
		if (res == DE_R_FAILED) {
			e->op = DE_OP_OPEN;
			e->err = -fd;
		}
		e->done = 1;
	}
	if (res == DE_R_FAILED)
		de__node_keep(ctx, n);
}

void de__node_keep(de_ctx *ctx, struct de__node *n)
{
	lock(ctx);
	n->kept = 1;
	unlock(ctx);
}

void de__node_running(de_ctx *ctx, struct de__node *n)
{
	lock(ctx);
	n->state = NS_RUNNING;
	unlock(ctx);
}

/*
 * Phase 2 of scanned node n for a schedule that unlinked its files itself
 * (global.c): unlink what is left of them, in listing order, publish them
 * and drop n's own reference.  Its children were made already.
 */
void de__files_run(de_ctx *ctx, struct de__node *n)
{
	size_t i;
	int fd = -1, pinned = 0;

	for (i = 0; i < n->nents; i++) {
		const struct de__ent *e = &n->ents[i];

		if (e->type != DE_T_DIR && !e->done && e->action == DE_A_DELETE)
			break;
	}
	if (i < n->nents) {
		fd = de__node_pin(ctx, n, -1);
		pinned = fd >= 0;
		if (pinned)
			unlink_range(ctx, n, fd, NULL, 0);
		else
			unreachable_files(ctx, n, fd);
	}
	p2_begin(ctx, n);
	files_done(ctx, n, NULL);
	de__node_release(ctx, n, pinned);
}

/*
 * Phase 2 of a scanned node whose children are made and scheduled
 * already (n->early), as a work item, bypassing the phase-2 gate: the
 * global schedule hands its window to the pool this way (global.c).
 */
void de__files_task(struct de__work *w, void *buf)
{
	struct de__node *n = (void *)((char *)w -
				      offsetof(struct de__node, work));

	(void)buf;
	de__phase2(n->ctx, n, 0);
}

/*
 * Phase 2 of a scanned node, on a worker (or inline): create and schedule
 * the children, unlink the non-directories (split across workers when the
 * directory is huge), then drop n's own reference.  pinned: n is pinned.
 */
void de__phase2(de_ctx *ctx, struct de__node *n, int pinned)
{
	uint32_t *idx = NULL;
	size_t k = 0;
	int fd = -1;
	/*
	 * Read once: children made must also be scheduled.  Children made
	 * early (run_phase2) are scheduled already, so those files must be
	 * unlinked too (a cancel marks them SKIPPED in unlink_range).
	 */
	int early = n->early;
	int stop = !early && (n->skip_scan || de__cancelled(ctx));

	if (!stop) {
		fd = pinned ? n->fd : de__node_pin(ctx, n, -1);
		if (!pinned && fd >= 0)
			pinned = 1;
		if (!early)
			de__make_children(ctx, n);
	}
	p2_begin(ctx, n);
	if (stop) {
		files_done(ctx, n, NULL);
		de__node_release(ctx, n, pinned);
		return;
	}
	if (!early)
		schedule_children(ctx, n);
	idx = fd < 0 ? NULL : de__inode_order(n, &k);
	if (fd < 0) {
		unreachable_files(ctx, n, fd);
		files_done(ctx, n, idx);
		de__node_release(ctx, n, pinned);
		return;
	}
	/*
	 * Splitting: a directory with at least split_min files to unlink is
	 * cut into one chunk per worker (of at least DE__CHUNK_MIN files), and so
	 * is one with split_idle_min
	 * when no task is queued, which the other workers would otherwise
	 * wait for (with tasks queued they are better spent on other
	 * directories).  See README, "Heuristics".
	 */
	if (idx && (k >= (size_t)ctx->split_min ||
	     (k >= (size_t)ctx->split_idle_min &&
	      __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) == 0)) &&
	    ctx->run_threads > 1 && k >= 2 * DE__CHUNK_MIN &&
	    de__want_split(ctx, n->fstype)) {
		unsigned nch = ctx->run_threads, i;
		size_t per, start;

		if (k / nch < DE__CHUNK_MIN)
			nch = (unsigned)(k / DE__CHUNK_MIN);
		per = k / nch;
		start = per;

		lock(ctx);
		n->chunks += nch - 1;
		n->refs += nch - 1;
		n->pins += nch - 1;
		unlock(ctx);
		for (i = 1; i < nch; i++) {
			struct de__chunk *c = malloc(sizeof(*c));
			size_t cnt = i == nch - 1 ? k - start : per;

			if (!c) {
				/* Do it ourselves. */
				unlink_range(ctx, n, fd, idx + start, cnt);
				lock(ctx);
				n->chunks--;
				n->refs--;
				n->pins--;
				unlock(ctx);
			} else {
				c->node = n;
				c->idx = idx;
				c->start = start;
				c->n = cnt;
				c->work.fn = chunk_task;
				de__pool_submit(&ctx->pool, &c->work, 1);
			}
			start += cnt;
		}
		k = per;
	}
	unlink_range(ctx, n, fd, idx, k);
	files_done(ctx, n, idx);
	de__node_release(ctx, n, pinned);
}

/*
 * Drop one reference of n (pinned: the caller holds a pin on n, which is
 * handed over).  The last reference removes n from its parent, publishes
 * NS_FINAL and continues with the parent.
 */
void de__node_release(de_ctx *ctx, struct de__node *n, int pinned)
{
	for (;;) {
		struct de__node *p = n->parent;
		int last, ppinned = 0, res, op = 0, err = 0;

		int cfd = -1;

		/*
		 * Unpin in the same critical section: once the lock is
		 * dropped, the last holder may finish n and the calling
		 * thread free it.
		 */
		lock(ctx);
		last = --n->refs == 0;
		if (!last && pinned)
			cfd = unpin_locked(ctx, n);
		unlock(ctx);
		if (!last) {
			if (cfd >= 0)
				close(cfd);
			return;
		}
		if (!p) {
			lock(ctx);
			n->state = NS_FINAL;
			wake(ctx);
			unlock(ctx);
			return;
		}
		if (n->skip_scan) {
			res = n->res;
			op = n->op;
			err = n->err;
		} else if (de__cancelled(ctx)) {
			res = DE_R_SKIPPED;
		} else if (n->kept) {
			res = DE_R_NOT_EMPTY;
		} else {
			res = de__rmdir_node(ctx, n, pinned ? n->fd : -1,
					     &ppinned, &op, &err);
		}
		if (pinned)
			de__node_unpin(ctx, n);
		lock(ctx);
		n->res = (uint8_t)res;
		n->op = (uint8_t)op;
		n->err = err;
		n->state = NS_FINAL;
		if (res != DE_R_REMOVED && res != DE_R_VANISHED)
			p->kept = 1;
		if (!ctx->ordered)
			ev_push(ctx, n, DE__EV_SELF);
		de__signal(ctx);
		unlock(ctx);
		/* n may be freed by the emitter from here on. */
		n = p;
		pinned = ppinned;
	}
}

/*
 * Look-ahead bounds of a scanning thread along a chain (run_phase2): at
 * most ctx->ahead_max scanned nodes (each holds a pinned fd; see
 * run.c reset_run) and READY_ENTS_MAX listed entries (about 40 bytes
 * plus the name each) wait on the ready queue.
 */
#define READY_ENTS_MAX	65536u

/*
 * Take c, a child just made, to scan it on this thread without queueing
 * it.  Tree lock held.  Returns 0 when the ordered window is full (the
 * caller schedules c instead, which defers it).
 */
static int take_child(de_ctx *ctx, struct de__node *c)
{
	if (ctx->ordered) {
		if (ctx->win_live >= ctx->win_max)
			return 0;
		c->inwin = 1;
		ctx->win_live++;
	}
	c->state = NS_RUNNING;
	return 1;
}

/* n's first child to delete, or NULL.  n's listing is complete. */
static struct de__node *first_child(struct de__node *n)
{
	size_t i;

	for (i = 0; i < n->nents; i++)
		if (n->ents[i].child)
			return n->ents[i].child;
	return NULL;
}

/*
 * Phase 2 of scanned node n (pinned: n is pinned), under phase-2
 * admission.  A thread may start unlinking when no other thread is, or
 * when at least ctx->p2_gate directory tasks are queued (the tree is wide
 * here: there is independent work for every worker).  Otherwise n goes on
 * the ready queue, and the thread already in phase 2 takes it when done
 * with its own directory, so a narrow tree runs as a pipeline: one thread
 * unlinks while the others read the next directories ahead.  Why: see
 * policy.c p2_gate.  A thread in phase 2 empties the ready queue
 * before it leaves, so a node put there is always picked up (both happen
 * under the tree lock).  Workers only, never the calling thread.
 *
 * Chains: a directory's subdirectories are known only once it is read,
 * so a reader that queued them in phase 2 (as before) could never be
 * more than one directory ahead of the unlinker, and slept and was woken
 * once per directory: de-rm on deep 2000x50, ext4, made 4,800-7,800
 * context switches against about 100 for rm -rf.  So when n is likely to
 * wait (another thread unlinks, few tasks are queued, the ready queue
 * has room), the scanning thread makes n's children itself, queues all
 * but the first and returns the first, which de__task scans next on the
 * same thread without a hand-off: along a chain it runs up to
 * ctx->ahead_max directories ahead while the unlinker takes them from
 * the queue in order.  When the queue is full, n's children are left to
 * its phase 2 as before (or, with ctx->p2_help, the reader unlinks it
 * itself).  Returns the child to scan next, or NULL.
 */
static struct de__node *run_phase2(de_ctx *ctx, struct de__node *n,
				   int pinned)
{
	unsigned gate = ctx->p2_gate;
	struct de__node *c = NULL;

	/*
	 * Racy peek: making children early is right whether or not n
	 * ends up deferred (phase 2 then skips it); the decision below is
	 * made under the lock.
	 */
	if (gate && !ctx->hookmode && !n->skip_scan && !de__cancelled(ctx) &&
	    __atomic_load_n(&ctx->p2_active, __ATOMIC_RELAXED) > 0 &&
	    __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) < gate &&
	    __atomic_load_n(&ctx->nready, __ATOMIC_RELAXED) < ctx->ahead_max &&
	    __atomic_load_n(&ctx->ready_ents, __ATOMIC_RELAXED) <
	    READY_ENTS_MAX) {
		size_t i;

		de__make_children(ctx, n);
		n->early = 1;
		c = first_child(n);
		for (i = n->nents; i-- > 0;)
			if (n->ents[i].child && n->ents[i].child != c)
				de__schedule(ctx, n->ents[i].child);
	}
	lock(ctx);
	if (ctx->p2_active > 0 && gate &&
	    __atomic_load_n(&ctx->pool.qlen, __ATOMIC_RELAXED) < gate) {
		/*
		 * The queue is full: the reader is ahead_max directories
		 * ahead and would sleep until the unlinker catches up.
		 * Where a second unlinker pays (ctx->p2_help, policy.c
		 * p2_help), it unlinks this directory itself, the
		 * deepest scanned, far from the unlinker's, then goes on
		 * reading from the child phase 2 queues.  It is not
		 * counted in p2_active: it does not empty the ready queue,
		 * so nodes must not be put there on its account.
		 */
		if (ctx->p2_help && !n->early &&
		    ctx->nready >= ctx->ahead_max) {
			unlock(ctx);
			de__phase2(ctx, n, pinned);
			return NULL;
		}
		n->rpinned = pinned;
		FIFO_APPEND(ctx->ready, ctx->ready_tail, n, rnext);
		__atomic_store_n(&ctx->nready, ctx->nready + 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->ready_ents, ctx->ready_ents + n->nents,
				 __ATOMIC_RELAXED);
		if (c && take_child(ctx, c)) {
			unlock(ctx);
			return c;
		}
		unlock(ctx);
		/* From here n may be done and freed; c holds a reference. */
		if (c)
			de__schedule(ctx, c);
		return NULL;
	}
	/* Written under the lock, read without it as a hint (above). */
	__atomic_store_n(&ctx->p2_active, ctx->p2_active + 1,
			 __ATOMIC_RELAXED);
	unlock(ctx);
	if (c)
		de__schedule(ctx, c);
	for (;;) {
		de__phase2(ctx, n, pinned);
		lock(ctx);
		n = ctx->ready;
		if (!n) {
			__atomic_store_n(&ctx->p2_active,
					 ctx->p2_active - 1, __ATOMIC_RELAXED);
			unlock(ctx);
			return NULL;
		}
		ctx->ready = n->rnext;
		if (!ctx->ready)
			ctx->ready_tail = NULL;
		__atomic_store_n(&ctx->nready, ctx->nready - 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ctx->ready_ents, ctx->ready_ents - n->nents,
				 __ATOMIC_RELAXED);
		n->rnext = NULL;
		pinned = n->rpinned;
		unlock(ctx);
	}
}

/*
 * The work function of a directory: scan, then (worker mode) phase 2,
 * then the child run_phase2 handed back, if any, on the same thread.
 */
void de__task(struct de__work *w, void *buf)
{
	struct de__node *n = (void *)((char *)w -
				      offsetof(struct de__node, work));
	de_ctx *ctx = n->ctx;
	int pinned;

	lock(ctx);
	n->state = NS_RUNNING;
	unlock(ctx);
	if (ctx->serial || ctx->hookmode) {
		de__scan(ctx, n, buf, 0);
		return;
	}
	/*
	 * The calling thread (which runs a task itself only when the walk
	 * needs a directory no worker has started) must not stay in
	 * run_phase2 emptying the ready queue: it has reports and progress
	 * calls to make.  It bypasses the gate instead.
	 */
	if (buf == ctx->caller_buf) {
		pinned = de__scan(ctx, n, buf, 1);
		de__phase2(ctx, n, pinned);
		return;
	}
	do {
		pinned = de__scan(ctx, n, buf, 1);
		n = run_phase2(ctx, n, pinned);
	} while (n);
}

/* Phase 2 as a work item (hook mode, after enter_dir decided). */
void de__p2task(struct de__work *w, void *buf)
{
	struct de__node *n = (void *)((char *)w -
				      offsetof(struct de__node, work));

	(void)buf;
	/* Hook mode: run_phase2 never makes children early, so it never
	 * hands one back here. */
	(void)run_phase2(n->ctx, n, 0);
}

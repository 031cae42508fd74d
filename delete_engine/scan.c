/*
 * scan.c - reading one directory: reach it from its parent's fd, check
 * that it is the directory the parent listed (not a symlink swapped in,
 * not a mount point), and read its listing whole, typed.
 *
 * What this writes before the node's state is published under the tree
 * lock (listing, dev, ino) is read without the lock afterwards.
 */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* See internal.h. */
void *de__grow(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t c = *cap ? 2 * *cap : first;

	if (n < *cap)
		return v;
	v = realloc(v, c * size);
	if (v)
		*cap = c;
	return v;
}

/* See internal.h. */
long de__arena_add(char **a, size_t *len, size_t *cap, const char *name,
		   size_t nlen)
{
	size_t at = *len, c = *cap ? *cap : 4096;
	char *s = *a;

	while (c < at + nlen + 1)
		c *= 2;
	if (c > UINT32_MAX)
		return -ENOMEM;
	if (c > *cap) {
		s = realloc(s, c);
		if (!s)
			return -ENOMEM;
		*a = s;
		*cap = c;
	}
	memcpy(s + at, name, nlen);
	s[at + nlen] = 0;
	*len = at + nlen + 1;
	return (long)at;
}

/* Append one listing entry.  Returns 0 or -ENOMEM. */
int de__add_ent(struct de__node *n, const char *name, size_t len,
		uint64_t ino, enum de_type type)
{
	struct de__ent *e = de__grow(n->ls.ents, n->ls.nents, &n->ls.cap,
				     sizeof(*e), 64);
	long at;

	if (!e)
		return -ENOMEM;
	n->ls.ents = e;
	at = de__arena_add(&n->ls.arena, &n->ls.alen, &n->ls.acap, name, len);
	if (at < 0)
		return (int)at;
	e = &n->ls.ents[n->ls.nents++];
	memset(e, 0, sizeof(*e));
	e->name = (uint32_t)at;
	e->len = (uint16_t)len;
	e->type = (uint8_t)type;
	e->ino = ino;
	return 0;
}

static void skip(struct de__node *n, int res, int op, int err)
{
	n->fl.skip_scan = 1;
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
 * stock leaves a mode-000 directory with anything in it and says why;
 * an empty one goes by rmdir, unlink.c de__rmdir_unread).  A failed
 * chmod is not reported: the unlinks that need it fail and say so.
 */
static void make_writable(de_ctx *ctx, struct de__node *n, int fd,
			  const struct de__st *st)
{
	unsigned flags = ctx->run.flags;

	if (!(flags & DE_F_MAKE_WRITABLE) || (flags & DE_F_DRY_RUN) ||
	    st->uid != geteuid() || (st->mode & S_IWUSR))
		return;
	if (!de__fault(ctx, DE_OP_CHMOD, n->name))
		(void)fchmod(fd, (st->mode | S_IWUSR) & 07777);
}

/*
 * Open n relative to its parent's fd, and count it opened (the parent's
 * unopened).  Returns n's fd, pinned, or -1 with n skipped.  *by_name is
 * set when n->ino was taken from an lstat of the name just now, and *dino
 * is what readdir said.
 */
static int open_child(de_ctx *ctx, struct de__node *n, int *by_name,
		      ino_t *dino)
{
	struct de__node *p = n->parent;
	struct de__st st;
	int pfd, fd;

	if (de__cancelled(ctx)) {
		skip(n, DE_R_SKIPPED, 0, 0);
		fd = -1;
		goto done;
	}
	pfd = de__node_pin(ctx, p, -1);
	if (pfd < 0) {
		skip_err(n, DE_OP_OPEN, pfd);
		fd = -1;
		goto done;
	}
	/*
	 * Where readdir's d_ino is not stat's inode number (policy.c
	 * de__dino_is_stat; sshfs lists every entry as 0xffffffff), the
	 * identity the open is checked against is an lstat of the name just
	 * before the open, as fts checks its own lstat: a directory swapped
	 * in between is still caught, and so is a symlink (by O_NOFOLLOW).
	 * Failing that lstat fails the open.
	 */
	*dino = n->ino;
	fd = 0;
	if (!de__dino_is_stat(n->fstype) &&
	    (fd = de__lstatat(ctx, pfd, n->name, &st)) == 0) {
		n->ino = st.ino;
		*by_name = 1;
	}
	if (fd == 0)
		fd = de__open_dir(ctx, pfd, n->name);
	de__lock(ctx);
	p->cnt.unopened--;
	if (fd >= 0) {
		n->fd = fd;
		n->cnt.pins = 1;
		ctx->run.tree.nfds++;
	}
	de__unlock(ctx);
	de__node_unpin(ctx, p);
	if (fd < 0)
		skip_err(n, DE_OP_OPEN, fd);
	return fd < 0 ? -1 : fd;
done:
	de__lock(ctx);
	p->cnt.unopened--;
	de__unlock(ctx);
	return fd;
}

/*
 * Whether fd, just opened as n, may be entered: the directory n's parent
 * listed, on a device it may enter.  Fills *st.  Returns 0, or 1 with n
 * skipped.
 */
static int check_opened(de_ctx *ctx, struct de__node *n, int fd,
			int by_name, ino_t dino, struct de__st *st)
{
	int rc = de__fstat(ctx, fd, n->name, st), subvol;

	if (rc) {
		skip(n, DE_R_FAILED, DE_OP_STAT, -rc);
		return 1;
	}
	n->mode = st->mode;
	/*
	 * -x: every directory entered is on the device of its parent, so
	 * comparing with the parent is comparing with dirfd's device (or,
	 * with DE_F_TARGET_FS, the target's: rm --one-file-system removes
	 * an operand that is a btrfs subvolume and keeps what is on another
	 * device inside it).
	 */
	if ((ctx->cfg.flags & DE_F_ONE_FILE_SYSTEM) &&
	    st->dev != n->parent->dev &&
	    !(n->parent == ctx->run.root && (ctx->cfg.flags & DE_F_TARGET_FS))) {
		skip(n, DE_R_OTHER_FS, 0, 0);
		return 1;
	}
	/*
	 * A mount point is never entered.  A new device number alone does
	 * not make one where statx can tell (STATX_ATTR_MOUNT_ROOT): a btrfs
	 * subvolume has its own but is no mount, and rm -rf and stock rsync
	 * delete it (root may rmdir an empty one).  -x kept it above.
	 */
	subvol = st->dev != n->parent->dev && st->mount_root == 0;
	if (st->mount_root == 1 || (st->dev != n->parent->dev && !subvol)) {
		skip(n, DE_R_MOUNT, 0, 0);
		return 1;
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
	if ((n->ino && st->ino != n->ino &&
	     !(subvol && de__subvol_id(fd) == n->ino)) ||
	    (by_name && st->mount_root < 0 && dino && dino != st->ino &&
	     !de__dino_from_layer(n->fstype))) {
		skip(n, DE_R_FAILED, DE_OP_OPEN, ESTALE);
		return 1;
	}
	n->dev = st->dev;
	n->ino = st->ino;
	return 0;
}

/* Read n's listing whole through fd, typed, in canonical order when the
 * run is ordered.  On failure n is skipped with no listing. */
static void read_listing(de_ctx *ctx, struct de__node *n, int fd, void *buf)
{
	struct de__st st;
	size_t i;
	/* ENOENT here: the directory was removed after we opened it (Linux
	 * refuses to read a dead directory), so whatever it held is gone. */
	int rc = de__read_dir(ctx, fd, n->name, buf,
			      de__want_names_ahead(n->fstype), add_cb, n);

	if (rc) {
		n->ls.nents = 0;
		skip_err(n, DE_OP_READ, rc);
		return;
	}
	for (i = 0; i < n->ls.nents; i++) {
		struct de__ent *e = &n->ls.ents[i];

		if (e->type != DE_T_UNKNOWN)
			continue;
		if (de__lstatat(ctx, fd, de__ent_name(n, e), &st) == 0) {
			e->type = (uint8_t)de_type_of_mode(st.mode);
			e->mode = st.mode;
		}
	}
	if (de__ordered(ctx))
		de__sort_canonical(ctx, n);
}

/*
 * Open, check and read directory n (never the root).  Afterwards either
 * n->fl.skip_scan is set (res/op/err say why it is not entered) or n's listing
 * is complete, typed, and sorted canonically when ordered.  *pin is n's
 * pin, held with keep_pin when n was opened, for the caller.  Returns 1
 * when n's phase 2 must run at once (hook mode, n not entered: see
 * below; sched.c de__scan does it), else 0.  Sets NS_SCANNED.
 */
int de__scan_node(de_ctx *ctx, struct de__node *n, void *buf, int keep_pin,
		  struct de__pin *pin)
{
	struct de__st st;
	int fd, by_name = 0, finish;
	ino_t dino = 0;

	*pin = DE__NO_PIN;
	fd = open_child(ctx, n, &by_name, &dino);
	if (fd >= 0) {
		/* open_child() left n pinned: that pin. */
		*pin = (struct de__pin){ n, fd };
		if (!check_opened(ctx, n, fd, by_name, dino, &st)) {
			make_writable(ctx, n, fd, &st);
			read_listing(ctx, n, fd, buf);
		}
	}
	if (pin->n && !keep_pin)
		de__pin_drop(ctx, pin);
	de__lock(ctx);
	de__set_state(n, NS_SCANNED);
	if (de__serial(ctx))
		ctx->run.tree.scans_inflight--;
	/*
	 * Hook mode: phase 2 waits for the walk, which calls enter_dir and
	 * then submits it (walk.c), but the walk enters only the nodes
	 * it can: one that was not entered (a mount point, an open failure,
	 * a directory that vanished) would never become final, and the walk
	 * would wait for it forever.  It has no listing to ask the hook
	 * about, so its phase 2 runs at once (sched.c de__scan).  Claimed
	 * under the lock that publishes NS_SCANNED, so that drain_cancel()
	 * never starts it a second time.
	 */
	finish = ctx->run.plan.dir_hooks && !de__serial(ctx) && n->fl.skip_scan;
	if (finish)
		n->fl.p2sub = 1;
	de__signal(ctx);
	de__unlock(ctx);
	return finish;
}

/*
 * The caller's enter_dir hook on n's listing (the calling thread): it
 * sets each entry's action.  Without memory to ask, everything is kept:
 * what the caller would protect must not go unasked.  A non-zero return
 * cancels the run.  n->fl.hooked records the call for de__leave_dir(), and
 * for a walk that takes over from the reader (walk.c de__ordered_walk): each
 * directory is entered and left once, whoever gets there first.
 */
void de__enter_dir(de_ctx *ctx, struct de__node *n)
{
	struct de_dirent *d = NULL;
	size_t i;
	int rc;

	if (n->ls.nents)
		d = malloc(n->ls.nents * sizeof(*d));
	if ((n->ls.nents && !d) || de__node_path(ctx, n, 0) < 0) {
		for (i = 0; i < n->ls.nents; i++)
			n->ls.ents[i].action = DE_A_KEEP;
		free(d);
		n->fl.hooked = DE__HOOK_DONE;	/* no leave_dir either */
		return;
	}
	n->fl.hooked = DE__HOOK_ENTERED;
	for (i = 0; i < n->ls.nents; i++) {
		d[i].name = de__ent_name(n, &n->ls.ents[i]);
		d[i].type = (enum de_type)n->ls.ents[i].type;
		d[i].action = DE_A_DELETE;
	}
	rc = ctx->run.hooks->enter_dir(ctx->run.hooks->arg, ctx->pbuf, d, n->ls.nents);
	for (i = 0; i < n->ls.nents; i++)
		if (d[i].action == DE_A_KEEP || d[i].action == DE_A_DONE)
			n->ls.ents[i].action = (uint8_t)d[i].action;
	free(d);
	if (rc) {
		pthread_mutex_lock(&ctx->mu);
		__atomic_store_n(&ctx->run.cancel, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&ctx->mu);
	}
}

/* The leave_dir hook matching n's enter_dir, once. */
void de__leave_dir(de_ctx *ctx, struct de__node *n)
{
	if (n->fl.hooked != DE__HOOK_ENTERED)
		return;
	n->fl.hooked = DE__HOOK_DONE;
	if (ctx->run.hooks->leave_dir && de__node_path(ctx, n, 0) >= 0)
		ctx->run.hooks->leave_dir(ctx->run.hooks->arg, ctx->pbuf);
}

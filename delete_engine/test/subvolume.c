/* subvolume: a btrfs subvolume inside the tree has a device number of its
 * own but is no mount point: it is removed, as rm -rf and stock rsync
 * remove it, nested ones too; with DE_F_ONE_FILE_SYSTEM it is kept, as
 * another device (DE_R_OTHER_FS), unless it is the target itself and
 * DE_F_TARGET_FS is set (rm's --one-file-system); a bind mount inside a
 * subvolume is still never entered.  The portable path, which cannot ask statx about
 * mount roots, keeps a subvolume as a mount point (DE_R_MOUNT).  Needs
 * root for a loop-mounted btrfs (exit 77 without root or mkfs.btrfs). */
#include "tutil.h"
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>

/* Make dfd/parent/name a subvolume.  Returns 0 or -1. */
static int subvol(int dfd, const char *parent, const char *name)
{
	struct btrfs_ioctl_vol_args args = { 0 };
	int pfd = openat(dfd, parent, O_RDONLY | O_DIRECTORY), rc;

	if (pfd < 0)
		return -1;
	snprintf(args.name, sizeof args.name, "%s", name);
	rc = ioctl(pfd, BTRFS_IOC_SUBVOL_CREATE, &args);
	close(pfd);
	return rc ? -1 : 0;
}

/* t/{f, sv/{g, d/h, nested/i}}, sv and sv/nested subvolumes. */
static int tree(int wd)
{
	if (t_paths(wd, "t/f", "t/x/", NULL) || subvol(wd, "t", "sv") ||
	    t_paths(wd, "t/sv/g", "t/sv/d/h", NULL) ||
	    subvol(wd, "t/sv", "nested") || t_paths(wd, "t/sv/nested/i", NULL))
		return -1;
	return 0;
}

int test(int dfd)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct t_rep *r;
	char bind[sizeof t_mnt + 16];
	int ret = T_FAIL, wd = -1, tfd = -1, rc, bound = 0;

	(void)dfd;	/* the trees go on the btrfs, in the temp dir's mnt */
	wd = t_loop_mount("256M", "mkfs.btrfs -q -f");
	if (wd < 0) {
		ret = T_SKIP;
		goto out;
	}
	CHECK(tree(wd) == 0);

	/* Removed whole; each subvolume reported removed. */
	rc = t_remove(wd, "t", 2, 0, -1, &rs, &sum);
#ifdef DE_PORTABLE
	CHECK(rc == 0);
	r = t_find(&rs, "t/sv");
	CHECK(r && r->result == DE_R_MOUNT);
	CHECK(t_exists(wd, "t/sv/nested/i"));
	ret = T_PASS;
	goto out;
#else
	char src[sizeof t_mnt + 16];

	CHECK(rc == 0);
	CHECK(!t_exists(wd, "t"));
	CHECK(sum.failed == 0 && sum.not_empty == 0 && sum.mounts == 0);
	r = t_find(&rs, "t/sv");
	CHECK(r && r->result == DE_R_REMOVED);
	r = t_find(&rs, "t/sv/nested");
	CHECK(r && r->result == DE_R_REMOVED);
	t_reps_free(&rs);

	/* -x: the subvolume is another device, kept with all it holds. */
	CHECK(tree(wd) == 0);
	rc = t_remove(wd, "t", 2, DE_F_ONE_FILE_SYSTEM, -1, &rs, &sum);
	CHECK(rc == 0);
	r = t_find(&rs, "t/sv");
	CHECK(r && r->result == DE_R_OTHER_FS);
	CHECK(t_exists(wd, "t/sv/nested/i") && !t_exists(wd, "t/f"));
	r = t_find(&rs, "t");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	t_reps_free(&rs);

	/* DE_F_TARGET_FS (rm --one-file-system): the device is the
	 * target's own, so a subvolume named as the target is emptied and
	 * one nested in it kept. */
	tfd = openat(wd, "t", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(tfd >= 0);
	rc = t_remove(tfd, "sv", 2, DE_F_ONE_FILE_SYSTEM | DE_F_TARGET_FS, -1,
		      &rs, &sum);
	CHECK(rc == 0);
	r = t_find(&rs, "sv/nested");
	CHECK(r && r->result == DE_R_OTHER_FS);
	CHECK(t_exists(wd, "t/sv/nested/i") && !t_exists(wd, "t/sv/g") &&
	      !t_exists(wd, "t/sv/d"));
	t_reps_free(&rs);

	/* A bind mount of the same file system inside a subvolume. */
	CHECK(t_paths(wd, "t/sv/bm/", "bsrc/keep", NULL) == 0);
	snprintf(bind, sizeof bind, "%s/t/sv/bm", t_mnt);
	snprintf(src, sizeof src, "%s/bsrc", t_mnt);
	CHECK(mount(src, bind, NULL, MS_BIND, NULL) == 0);
	bound = 1;
	rc = t_remove(wd, "t", 2, 0, -1, &rs, &sum);
	CHECK(rc == 0);
	r = t_find(&rs, "t/sv/bm");
	CHECK(r && r->result == DE_R_MOUNT);
	CHECK(t_exists(wd, "bsrc/keep") && t_exists(wd, "t/sv/bm/keep"));
	CHECK(!t_exists(wd, "t/sv/nested"));
	ret = T_PASS;
#endif
out:
	t_reps_free(&rs);
	if (tfd >= 0)
		close(tfd);
	if (bound && umount2(bind, MNT_DETACH))
		fprintf(stderr, "umount bind failed\n");
	t_umount(wd);
	return ret;
}

/* immutable: an immutable file (chattr +i) fails with EPERM, its
 * directories are kept, the rest is removed.  Uses the temp dir when its
 * file system supports the flag, else (as root) a loop-mounted ext4; exit
 * 77 when neither works. */
#include "tutil.h"
#include <linux/fs.h>
#include <sys/ioctl.h>

static int set_immutable(int dfd, const char *name, int on)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW), fl, rc = -1;

	if (fd < 0)
		return -1;
	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
		fl = on ? fl | FS_IMMUTABLE_FL : fl & ~FS_IMMUTABLE_FL;
		rc = ioctl(fd, FS_IOC_SETFLAGS, &fl);
	}
	close(fd);
	return rc;
}

int test(int dfd)
{
	struct t_reps rs = { 0 };
	struct de_summary sum;
	struct t_rep *r;
	int ret = T_FAIL, wd = -1, rc;

	CHECK(t_file(dfd, "probe") == 0);
	if (set_immutable(dfd, "probe", 1) == 0) {
		set_immutable(dfd, "probe", 0);
		wd = dup(dfd);
	} else {
		wd = t_loop_mount("64M", "mkfs.ext4 -q");
		if (wd < 0) {
			ret = T_SKIP;
			goto out;
		}
	}
	CHECK(wd >= 0);
	CHECK(mkdirat(wd, "tree", 0755) == 0);
	CHECK(t_mixed(wd, "tree/other", 2, 3) == 0);
	CHECK(t_paths(wd, "tree/sub/imm", "tree/sub/a", NULL) == 0);
	if (set_immutable(wd, "tree/sub/imm", 1)) {
		ret = T_SKIP;
		goto out;
	}
	rc = t_remove(wd, "tree", 2, 0, -1, &rs, &sum);
	set_immutable(wd, "tree/sub/imm", 0);
	CHECK(rc == -EIO);
	r = t_find(&rs, "tree/sub/imm");
	CHECK(r && r->result == DE_R_FAILED && r->op == DE_OP_UNLINK &&
	      r->err == EPERM);
	r = t_find(&rs, "tree/sub");
	CHECK(r && r->result == DE_R_NOT_EMPTY);
	CHECK(sum.failed == 1 && sum.not_empty == 2);
	CHECK(!t_exists(wd, "tree/other") && !t_exists(wd, "tree/sub/a"));
	CHECK(t_exists(wd, "tree/sub/imm"));
	ret = T_PASS;
out:
	t_reps_free(&rs);
	if (wd >= 0)
		set_immutable(wd, "tree/sub/imm", 0);
	t_umount(wd);
	return ret;
}

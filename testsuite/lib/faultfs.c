/*
 * faultfs: a FUSE file system that passes every request through to a
 * backing directory, except that it fails the ones it is told to with
 * EIO.  The fork's tests use it to make errors that a real disk gives
 * only when it is failing: an entry whose getattr fails (as a cleared
 * inode on ext4 does), a directory whose read fails.
 *
 *   faultfs [--getattr-eio=NAME] [--readdir-eio=NAME] [--no-dtype]
 *           BACKING MOUNTPOINT [FUSE options, e.g. -f -s]
 *
 * NAME is matched against the last component of the path, so that one
 * option hits the same entry in every copy of a tree.  --no-dtype lists
 * every entry as DT_UNKNOWN, as ext4 without the filetype feature does,
 * so that readers must stat what they list.
 *
 * Paths are resolved relative to a descriptor on BACKING: the mount
 * point may cover it.  Built with libfuse3 (Debian's libfuse3-dev).
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int base_fd = -1;
static const char *getattr_eio, *readdir_eio;
static int no_dtype;

/* The path FUSE gives ("/a/b") relative to base_fd ("a/b", or "."). */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* Returns 1 when the last component of PATH is NAME. */
static int hit(const char *path, const char *name)
{
	const char *leaf = strrchr(path, '/');

	return name && strcmp(leaf ? leaf + 1 : path, name) == 0;
}

/* Every handler returns 0 or a negative errno, as FUSE wants. */
#define CHECK(call) ((call) < 0 ? -errno : 0)

static int fs_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	(void)fi;
	if (hit(path, getattr_eio))
		return -EIO;
	return CHECK(fstatat(base_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(base_fd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct dirent *de;
	DIR *d;
	int fd;

	(void)off, (void)fi, (void)flags;
	if (hit(path, readdir_eio))
		return -EIO;
	fd = openat(base_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st = { .st_ino = de->d_ino };

		st.st_mode = (mode_t)de->d_type << 12;
		if (fill(buf, de->d_name, no_dtype ? NULL : &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int fs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return CHECK(mknodat(base_fd, rel(path), mode, rdev));
}

static int fs_mkdir(const char *path, mode_t mode)
{
	return CHECK(mkdirat(base_fd, rel(path), mode));
}

static int fs_unlink(const char *path)
{
	return CHECK(unlinkat(base_fd, rel(path), 0));
}

static int fs_rmdir(const char *path)
{
	return CHECK(unlinkat(base_fd, rel(path), AT_REMOVEDIR));
}

static int fs_symlink(const char *target, const char *path)
{
	return CHECK(symlinkat(target, base_fd, rel(path)));
}

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
	return CHECK(renameat2(base_fd, rel(from), base_fd, rel(to), flags));
}

static int fs_link(const char *from, const char *to)
{
	return CHECK(linkat(base_fd, rel(from), base_fd, rel(to), 0));
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	return CHECK(fchmodat(base_fd, rel(path), mode, 0));
}

static int fs_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	(void)fi;
	return CHECK(fchownat(base_fd, rel(path), uid, gid,
			      AT_SYMLINK_NOFOLLOW));
}

static int fs_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	(void)fi;
	return CHECK(utimensat(base_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, rc;

	if (fi)
		return CHECK(ftruncate(fi->fh, size));
	if ((fd = openat(base_fd, rel(path), O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	rc = CHECK(ftruncate(fd, size));
	close(fd);
	return rc;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(base_fd, rel(path), fi->flags | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = openat(base_fd, rel(path), fi->flags | O_CREAT | O_CLOEXEC,
			mode);

	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	ssize_t n = pread(fi->fh, buf, size, off);

	(void)path;
	return n < 0 ? -errno : (int)n;
}

static int fs_write(const char *path, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	ssize_t n = pwrite(fi->fh, buf, size, off);

	(void)path;
	return n < 0 ? -errno : (int)n;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close(fi->fh);
	return 0;
}

static int fs_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return CHECK(fstatvfs(base_fd, sv));
}

static const struct fuse_operations ops = {
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.chmod = fs_chmod,
	.chown = fs_chown,
	.truncate = fs_truncate,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.statfs = fs_statfs,
	.release = fs_release,
	.readdir = fs_readdir,
	.create = fs_create,
	.utimens = fs_utimens,
};

static void usage(void)
{
	fprintf(stderr, "usage: faultfs [--getattr-eio=NAME] [--readdir-eio=NAME] "
		"[--no-dtype] BACKING MOUNTPOINT [FUSE options]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char **fargv = calloc(argc + 1, sizeof *fargv);
	int i = 1, fargc = 0;

	if (!fargv)
		return 1;
	fargv[fargc++] = argv[0];
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strncmp(argv[i], "--getattr-eio=", 14) == 0)
			getattr_eio = argv[i] + 14;
		else if (strncmp(argv[i], "--readdir-eio=", 14) == 0)
			readdir_eio = argv[i] + 14;
		else if (strcmp(argv[i], "--no-dtype") == 0)
			no_dtype = 1;
		else
			usage();
	}
	if (argc - i < 2)
		usage();
	base_fd = open(argv[i++], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0) {
		perror(argv[i - 1]);
		return 1;
	}
	while (i < argc)
		fargv[fargc++] = argv[i++];
	return fuse_main(fargc, fargv, &ops, NULL);
}

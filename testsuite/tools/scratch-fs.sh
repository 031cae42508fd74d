#!/bin/sh
# scratch-fs.sh COMMAND...: COMMAND with TMPDIR on a file system of its own,
# a new ext4 on a sparse loop image that is removed when COMMAND ends.
#
# The engine's tests and the fork's create and remove hundreds of
# thousands of inodes.  On a long-used ext4, such as a build machine's
# root, most of their time went to the kernel's inode allocator instead
# of the code under test: after a mass deletion, each new inode makes
# ext4 read inode-table blocks to skip recently deleted ones (perf shows
# recently_deleted() under ext4_create and ext4_mkdir).  A new file
# system also gives every run the same start, whatever the machine's
# disk has been through.
#
# As root only.  A user, or a machine where the image cannot be made or
# mounted, runs COMMAND on the usual TMPDIR, after a line that says so.
# The image lives in build/ (where check-fresh's clean-up finds loop
# devices it left).  After a failure it is kept, with the command that
# mounts it where it was, so that the scratch directories a failing suite
# kept can be read at the paths it printed.

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
say() { printf 'scratch-fs: %s\n' "$*" >&2; }
[ $# -gt 0 ] || { say "usage: scratch-fs.sh COMMAND..."; exit 2; }

tmp=${TMPDIR:-/tmp}
if [ "$(id -u)" != 0 ]; then
	say "not root: the tests run in $tmp"
	exec "$@"
fi

img='' mnt='' rc=1
cleanup() {
	if [ -n "$mnt" ]; then
		# A mount a killed test left inside goes with it (-R); a
		# process still holding a file leaves it lazily (-l).
		if mountpoint -q "$mnt"; then
			umount -R "$mnt" 2>/dev/null || umount -R -l "$mnt"
		fi
	fi
	if [ "$rc" = 0 ]; then
		[ -z "$mnt" ] || rmdir "$mnt"
		[ -z "$img" ] || rm -f "$img"
	elif [ -n "$img" ]; then
		# The paths a failing suite printed are under $mnt.
		say "the tests' file system is kept: mount -o loop $img $mnt"
	fi
}
trap 'cleanup' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! { mkdir -p "$top/build" &&
	img=$(mktemp "$top/build/scratch-fs.XXXXXX") &&
	mnt=$(mktemp -d "$tmp/rsync-de-scratch.XXXXXX") &&
	truncate -s 8G "$img" &&
	mkfs.ext4 -q -F "$img" &&
	mount -o loop,noinit_itable "$img" "$mnt" &&
	chmod 1777 "$mnt"; }; then
	say "could not mount a new file system: the tests run in $tmp"
	rc=0 # nothing to keep: remove what was made
	cleanup
	img='' mnt=''
fi

TMPDIR=${mnt:-$tmp} "$@"
rc=$?
exit $rc

#!/bin/sh
# deps.sh: make sure the Debian packages a step needs are installed.
#
# Usage: rsync-src/deps.sh build|check|bench|deb|demo|fresh|coreutils ...
#
# Each group lists the packages one make step needs.  As root on Debian or
# Ubuntu the missing ones are installed with apt-get; otherwise the exact
# apt-get line is printed and the script fails, so a build never half-works
# for want of a library.  RSYNC_DE_NO_INSTALL=1 turns installing off.

set -eu

pkgs_build="build-essential autoconf quilt xz-utils python3 python3-cmarkgfm
	zlib1g-dev libpopt-dev libxxhash-dev libssl-dev liblz4-dev libzstd-dev
	libacl1-dev libattr1-dev libidn2-dev"
# Upstream's suite uses acl/attr tools; the fork's suite adds an sshd, the
# Debian rsync peer, the filesystems it mounts on loop images, and fpsync
# (fpart) to run rsync-de as its workers' rsync, and sshfs (with fuse3's
# fusermount3 and the sftp-server it talks to) for a FUSE file system whose
# readdir inode numbers are not stat's; libfuse3-dev and pkg-config build
# the FUSE helpers (testsuite/lib/faultfs.c; bench/slowdisk and bench/netfs,
# the disk and network file system models).
# mount (mount, losetup) and passwd (useradd) are not Essential either;
# upstream's chown and devices tests need fakeroot when not run as root;
# strace counts the threads a deletion starts (delete-one-context).
pkgs_check="acl attr openssh-server openssh-client rsync e2fsprogs xfsprogs
	btrfs-progs util-linux mount passwd procps fakeroot fpart sshfs fuse3
	openssh-sftp-server strace libfuse3-dev pkg-config rsnapshot"
pkgs_bench="e2fsprogs xfsprogs btrfs-progs util-linux mount procps time rsync python3-matplotlib
	openssh-server openssh-client sshfs fuse3 openssh-sftp-server libfuse3-dev pkg-config"
# make demo's slow-disk part: the disk model (FUSE) under a loop ext4.
pkgs_demo="libfuse3-dev pkg-config fuse3 e2fsprogs util-linux mount"
# make deb builds with debhelper; check-deb runs lintian and man.
pkgs_deb="debhelper dpkg-dev lintian man-db"
# make check-fresh builds a minimal Debian root to run the README in.
pkgs_fresh="mmdebstrap"
# make check-coreutils-rm builds coreutils (a compiler, make, xz for the
# tarball, perl for its man pages and its .pl tests) and runs its rm
# tests, which make ext2 file systems, loop-mount them and chattr +i.
pkgs_coreutils="build-essential perl xz-utils e2fsprogs mount"

want=
for group in "$@"; do
	eval "want=\"\$want \$pkgs_$group\""
done

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: not a Debian system; make sure these (Debian names) are installed:" >&2
	echo "  $(echo $want)" >&2
	exit 0
fi

missing=
# awk is not Essential: no tool here may need a package of its own.
for p in $(printf '%s\n' $want | LC_ALL=C sort -u); do
	case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ] || [ "${RSYNC_DE_NO_INSTALL:-}" = 1 ]; then
	echo "deps: missing Debian packages; install them with:" >&2
	echo "  sudo apt-get install -y$missing" >&2
	exit 1
fi

echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Index files may be absent (fresh images ship none) or stale: update first.
apt-get update -qq >/dev/null || apt-get update
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
	apt-get install -y --no-install-recommends $missing

#!/bin/sh
# run-as-user.sh TREE RSYNC [RUNTESTS-ARGS...]: run upstream's suite in
# TREE (a configured, built upstream tree) against the binary RSYNC as a
# throwaway unprivileged user.
#
# As root: a user is created with useradd, TREE and RSYNC are copied into
# a fresh directory the user owns (the suite writes its scratch
# directories inside the tree), runtests.py runs there as the user, and
# on every exit -- failure and interruption included -- the user's
# processes are killed by pid, the user is deleted and the copy removed.
# As a non-root user it just runs the suite in a copy.

set -eu
tree=$1
rsync_bin=$2
shift 2

python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/rsync-de-user.XXXXXX")
user=
cleanup() {
	rc=$?
	trap - EXIT INT TERM HUP
	if [ -n "$user" ]; then
		# Only this throwaway user's processes, each by its pid.
		for pid in $(ps -o pid= -u "$user" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null || :
		done
		userdel "$user" 2>/dev/null || :
	fi
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cp -a "$tree" "$work/tree"
rm -rf "$work/tree/testtmp"
# DE_ENGINE names the delete engine the tree links (configure put its path
# in the Makefile), which upstream tests use when they rebuild rsync in a
# copy of the tree.  A checkout under root's home (mode 700 on Debian) is
# out of the user's reach: the copy gets the engine's header and library
# of its own.
if [ -n "${DE_ENGINE:-}" ]; then
	mkdir "$work/engine"
	cp -p "$DE_ENGINE/delete_engine.h" "$DE_ENGINE/libdelete_engine.a" "$work/engine/"
	sed -i "s|$DE_ENGINE|$work/engine|g" "$work/tree/Makefile" "$work/tree/config.status"
fi
# Named rsync: some tests look for the binary by that name.
mkdir "$work/bin"
cp -p "$rsync_bin" "$work/bin/rsync"
chmod 755 "$work"

# The suite runs with the system PATH, sbin included, for root and user
# alike: daemon-chroot-acl runs chroot by name, which a Debian user's
# PATH does not reach.
syspath=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin

if [ "$(id -u)" = 0 ]; then
	user=rsyncde-u$$
	useradd --no-create-home --home-dir "$work" --shell /bin/sh \
		--comment 'rsync-de check-user (temporary)' "$user"
	chown -R "$user:" "$work"
	# root's PATH may name directories the user cannot search (a
	# pyenv under /root): the system PATH instead.
	run() { setpriv --reuid="$user" --regid="$user" --init-groups \
		env HOME="$work" USER="$user" LOGNAME="$user" PATH="$syspath" "$@"; }
else
	run() { env PATH="$syspath" "$@"; }
fi

cd "$work/tree"
run "$python" runtests.py --rsync-bin="$work/bin/rsync" "$@"

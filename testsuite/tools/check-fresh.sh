#!/bin/sh
# check-fresh.sh: the proof that the README's two set-up commands work on a
# fresh Debian machine.  `make check-fresh` runs it, as root.
#
# A machine a developer or CI has used before hides a missing install
# step: whatever an earlier session installed by hand is still there.  So
# this builds a minimal Debian root with mmdebstrap (--variant=apt: the
# Essential packages, apt and git, no compiler), from the apt sources this
# machine already uses, and caches it as a tarball under build/fresh/.
# Then, every run:
#
#   1. unpacks the cached root afresh and puts a clean clone of HEAD in it
#      (committed work only, as CI sees it);
#   2. runs everything there as on a machine of its own: in a new mount
#      and PID namespace, with the root made the namespace's root by
#      pivot_root (not chroot: the kernel refuses a user namespace to a
#      chrooted process, and upstream's daemon-chroot-acl makes one),
#      /dev and /sys bound, a new /proc and a tmpfs on /run (with this
#      machine's /run/shm link, as a booted machine has);
#   3. runs the two commands of the README's "Set-up on a fresh Debian
#      machine" section, read from the README itself and run verbatim in
#      the root as root: `./configure && make demo`, then
#      `./configure && make check`;
#   4. checks that ./rsync --delete-only empties a generated tree there;
#   5. on every exit (failure and interrupt included) removes the root.
#      The namespaces take their mounts and processes with them when a
#      command ends; the clean-up still kills what runs in them if
#      check-fresh itself is interrupted, detaches loop devices backed by
#      files in the root, and refuses to remove a root with anything still
#      mounted under it.
#
# The README's apt-get line for a user who is not root is checked too:
# in the fresh root, ./configure run as nobody must print exactly that
# line and stop, before it looks for anything else.
#
# Logs go to build/fresh/*.log; the tail of a failing step is printed.
# FRESH_SUITE picks the release (default bookworm, Debian 12);
# FRESH_KEEP_BASE=0 forces a new base tarball.  --base-only builds (or
# finds) the cached base and stops: .ci/run does that while make check
# runs, as it is mostly download and unpacking.
#
# --chroot runs only `./configure && make check`, in the same fresh root
# entered as sbuild and pbuilder enter theirs: a plain chroot, whose root
# is not a mount point, with /proc and /sys mounted in and /dev bound
# without its submounts (mount --bind: no /dev/shm tmpfs, no /dev/pts),
# and nothing on /run, so that no tmp dir lies on another file system.
# --chroot-user does the same as a user who is not root (nobody), as in an
# unprivileged container: root only installs the packages first.  `make
# check-chroot` runs both; neither is part of CI (each is a whole make
# check).
# FRESH_CHECK=TARGET runs `./configure && make TARGET` there instead (say
# check-upstream), to try one part of make check in that setup quickly.

set -eu
mode=${1:-}
top=$(cd "$(dirname "$0")/../.." && pwd)
suite=${FRESH_SUITE:-bookworm}
dir=$top/build/fresh
base=$dir/$suite-apt.tar
root=$dir/root
src=/root/rsync-de
# nobody cannot reach into /root.
[ "$mode" != --chroot-user ] || src=/srv/rsync-de

say() { printf 'check-fresh: %s\n' "$*"; }
die() { say "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, namespaces and mounts)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (apt-get install mmdebstrap)"
git -C "$top" rev-parse --verify -q HEAD >/dev/null ||
	die "$top is not a git checkout: nothing to clone"

# mounts_under DIR: the mount points at or below DIR, deepest first.
mounts_under() {
	findmnt -rn -o TARGET | while IFS= read -r m; do
		# findmnt escapes blanks as \x20; our paths have none.
		case $m in "$1" | "$1"/*) printf '%s\n' "$m" ;; esac
	done | sort -r
}

# The PID namespaces that enter made, one a line (see enter).
nsfile=$dir/namespaces

# in_root PID: does process PID run in one of them?
in_root() {
	[ -s "$nsfile" ] || return 1
	ns=$(readlink "/proc/$1/ns/pid" 2>/dev/null) || return 1
	grep -qxF "$ns" "$nsfile"
}

# Loop devices attached before this run: the clean-up detaches only newer
# ones whose backing file lies in the root (a test killed mid-way).
loops_before=$(losetup -n -O NAME 2>/dev/null | sort | paste -sd' ' -) || :
cleanup() {
	rc=$?
	# A second signal must not cut the clean-up short: ignore them all.
	trap '' INT TERM HUP
	trap - EXIT
	# unshare ignores SIGINT and SIGTERM while its child runs; killed, it
	# takes the namespace's init, and so everything in it, along
	# (--kill-child).
	[ -z "${enter_pid:-}" ] || kill -KILL "$enter_pid" 2>/dev/null || :
	[ -d "$root" ] || exit $rc
	# Whatever the tests left running (daemons, sshd) inside the root.
	for sig in TERM KILL; do
		for p in /proc/[0-9]*; do
			pid=${p#/proc/}
			in_root "$pid" && kill -s $sig "$pid" 2>/dev/null
		done
		sleep 1
	done
	for m in $(mounts_under "$root"); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			say "cannot unmount $m" >&2
	done
	# A loop device shows its backing file's path as the process that
	# attached it saw it: inside the root, after pivot_root.
	losetup -n -O NAME,BACK-FILE 2>/dev/null | while read -r dev file; do
		case " $loops_before " in *" $dev "*) continue ;; esac
		case $file in /*) ;; *) continue ;; esac
		[ -e "$root${file% (deleted)}" ] && losetup -d "$dev" 2>/dev/null
	done
	# Never recurse into a bind mount of the host's /dev or /sys.
	if [ -n "$(mounts_under "$root")" ]; then
		say "still mounted under $root, not removing it:" >&2
		mounts_under "$root" >&2
		exit 1
	fi
	rm -rf --one-file-system "$root"
	rm -f "$nsfile"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$dir"
# A root left by a run that was killed with SIGKILL.
[ ! -e "$root" ] || (trap - EXIT; cleanup) || die "could not remove the old $root"

# --- The base root, cached ------------------------------------------------
if [ "${FRESH_KEEP_BASE:-1}" = 0 ]; then rm -f "$base"; fi
if [ ! -s "$base" ]; then
	# The machine's own archive: its apt source files as they are, and
	# the Acquire:: settings (proxy, validity checks) that reach it.
	set --
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		 /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && grep -q '^[[:space:]]*[^#[:space:]]' "$f" && set -- "$@" "$f"
	done
	[ $# -gt 0 ] || die "no apt sources in /etc/apt to build the root from"
	apt-config dump | grep '^Acquire::' > "$dir/aptopt.conf" || :
	say "building a minimal $suite root (mmdebstrap --variant=apt) from $*"
	if ! mmdebstrap --quiet --variant=apt --include=git \
		--aptopt="$dir/aptopt.conf" "$suite" "$dir/$suite-apt.part.tar" "$@" \
		> "$dir/mmdebstrap.log" 2>&1; then
		tail -n 30 "$dir/mmdebstrap.log" >&2
		rm -f "$dir/$suite-apt.part.tar"
		die "mmdebstrap failed; see $dir/mmdebstrap.log"
	fi
	mv -f "$dir/$suite-apt.part.tar" "$base"
fi

[ "$mode" != --base-only ] || { say "base root: $base"; exit 0; }

# --- A fresh copy of it, with a clean clone of HEAD ------------------------
mkdir "$root"
tar -xf "$base" -C "$root"
# Nothing but what the root was built with: no compiler, no make.
for tool in cc gcc make quilt xz python3; do
	if chroot "$root" sh -c "command -v $tool" >/dev/null 2>&1; then
		die "the base root already has $tool: it is not a fresh machine"
	fi
done
git clone -q "$top" "$root$src"
say "testing $(git -C "$root$src" log -1 --format='%h %s')"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
: > "$nsfile"

# enter CMD: run the shell command CMD in the root, as root, as a fresh
# login on a machine of its own would.  unshare's child is PID 1 of a new
# PID namespace, so whatever the tests leave running (daemons, sshd) is
# killed when CMD ends, and the mount namespace goes with it; if
# check-fresh is killed, --kill-child takes CMD down the same way.  The
# host's umount, run from the old root with the root's libraries, detaches
# the old root: the root has no umount before the build installs mount.
# With --chroot and --chroot-user the root is entered by chroot instead,
# as sbuild and pbuilder enter theirs: it is then not a mount point, its
# /dev has none of the host's submounts and its /run no tmpfs, and the
# namespaces are only for the clean-up.
how=pivot
case $mode in --chroot | --chroot-user) how=chroot ;; esac
enter() {
	unshare --mount --propagation private --pid --fork --kill-child -- \
		/bin/sh -c '
		set -e
		root=$1 nsfile=$2 cmd=$3 how=$4
		readlink /proc/self/ns/pid >> "$nsfile"
		if [ "$how" = chroot ]; then
			mount --bind /dev "$root/dev"
		else
			mount --bind "$root" "$root"
			mount --rbind /dev "$root/dev"
		fi
		mount --rbind /sys "$root/sys"
		mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
		if [ "$how" != chroot ]; then
			mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
			if [ -L /run/shm ]; then ln -s "$(readlink /run/shm)" "$root/run/shm"; fi
		fi
		if [ "$how" = chroot ]; then
			set -- chroot "$root"
		else
			cd "$root"
			mkdir .oldroot
			pivot_root . .oldroot
			cd /
			/.oldroot/usr/bin/umount -l /.oldroot
			rmdir /.oldroot
			set --
		fi
		exec "$@" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			TERM=dumb /bin/sh -c "$cmd"' enter "$root" "$nsfile" "$1" "$how" &
	# Waited for in the background, so that a signal runs the clean-up at
	# once instead of when the command ends.
	enter_pid=$!
	wait "$enter_pid" && enter_pid= || { erc=$?; enter_pid=; return $erc; }
}

# The commands, as the README gives them: the indented lines of its
# "Set-up on a fresh Debian machine" section that start with ./configure.
cmds=$(sed -n '/^## Set-up on a fresh Debian machine/,/^## /{
	s/^    \(\.\/configure .*\)$/\1/p
}' "$top/README.md")
[ "$(printf '%s\n' "$cmds" | wc -l)" = 2 ] ||
	die "expected two commands in README.md's set-up section, found: $cmds"

# run NAME CMD: run CMD in the root as a fresh login would, logged.
run() {
	name=$1
	shift
	say "$name: $*"
	start=$(date +%s)
	if enter "cd $src && $*" > "$dir/$name.log" 2>&1 </dev/null; then
		say "$name: ok in $(($(date +%s) - start)) s"
	else
		rc=$?
		tail -n 40 "$dir/$name.log" >&2
		die "$name failed (exit $rc) after $(($(date +%s) - start)) s; log: $dir/$name.log"
	fi
}

# --- make check in a chroot, as root or not -------------------------------
check_cmd=$(printf '%s\n' "$cmds" | grep 'make check$')
[ -z "${FRESH_CHECK:-}" ] || check_cmd="./configure && make $FRESH_CHECK"
case $mode in
--chroot)
	run chroot "$check_cmd"
	grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir/chroot.log" | sed 's/^/check-fresh:   /' || :
	say "passed: ${FRESH_CHECK:+make $FRESH_CHECK, not all of }make check in a chroot"
	exit 0 ;;
--chroot-user)
	run chroot-deps "./configure && rsync-src/deps.sh check bench deb &&
		chown -R 65534:65534 $src"
	run chroot-user "exec setpriv --reuid=65534 --regid=65534 --clear-groups \
		/usr/bin/env -i HOME=/tmp PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb \
		/bin/sh -c 'cd $src && $check_cmd'"
	grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir/chroot-user.log" | sed 's/^/check-fresh:   /' || :
	say "passed: ${FRESH_CHECK:+make $FRESH_CHECK, not all of }make check in a chroot, as nobody"
	exit 0 ;;
esac

# --- As a user who is not root: one apt-get line, then a stop -------------
want=$(sed -n '/^## Set-up on a fresh Debian machine/,/^## /{
	s/^    \(sudo apt-get install .*\)$/\1/p
}' "$top/README.md")
[ -n "$want" ] || die "README.md's set-up section gives no apt-get line"
say "user: ./configure as nobody"
if enter "cp -a $src /tmp/user-clone && chown -R 65534:65534 /tmp/user-clone &&
	exec setpriv --reuid=65534 --regid=65534 --clear-groups \
	/usr/bin/env -i HOME=/tmp PATH=/usr/local/bin:/usr/bin:/bin \
	/bin/sh -c 'cd /tmp/user-clone && ./configure'" > "$dir/user.log" 2>&1 </dev/null; then
	cat "$dir/user.log" >&2
	die "./configure as nobody succeeded on a machine without a compiler"
fi
got=$(sed -n 's/^[[:space:]]*\(sudo apt-get install .*\)$/\1/p' "$dir/user.log")
if [ "$got" != "$want" ]; then
	cat "$dir/user.log" >&2
	die "./configure as nobody did not print README.md's line: $want"
fi
if grep -q -i 'compiler' "$dir/user.log"; then
	cat "$dir/user.log" >&2
	die "./configure as nobody went on to look for a compiler"
fi
rm -rf "$root/tmp/user-clone"
say "user: ok, one apt-get line and a stop"

n=0
printf '%s\n' "$cmds" > "$dir/commands"
while IFS= read -r cmd; do
	n=$((n + 1))
	run "command$n" "$cmd"
done < "$dir/commands"
grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir/command2.log" | sed 's/^/check-fresh:   /' || :

# --- The product works: ./rsync --delete-only empties a tree ---------------
run delete-only '
	t=$(mktemp -d) && mkdir "$t/empty" "$t/tree" &&
	for d in 1 2 3 4 5 6 7 8 9 10; do
		mkdir -p "$t/tree/d$d/sub" && : > "$t/tree/d$d/f" && : > "$t/tree/d$d/sub/g" &&
		ln -s /etc "$t/tree/d$d/link"
	done &&
	./rsync --delete-only "$t/empty/" "$t/tree/" &&
	left=$(find "$t/tree" -mindepth 1 | wc -l) &&
	{ [ "$left" -eq 0 ] || { echo "rsync --delete-only left $left entries"; exit 1; }; } &&
	test -f /etc/passwd && rm -rf "$t"'
say "passed"

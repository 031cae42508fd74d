#!/bin/bash
# Peak RSS of rsync-de deleting 10,000,000 entries: one directory, and
# 10,000 x 1,000, under each schedule.  ext4 on an image in /dev/shm.
set -u
R=/tmp/b49/rsync-mem
IMG=/dev/shm/mem10m.img
M=/tmp/b49/mem-mnt
mkdir -p $M
one() {  # shape args... -- rsync args
	local shape=() ; while [ "$1" != -- ]; do shape+=("$1"); shift; done; shift
	rm -f $IMG; truncate -s 20G $IMG
	mkfs.ext4 -q -F -N 10600000 $IMG && mount -o loop $IMG $M || return
	mkdir -p $M/empty
	/work/main/bench/mktree -s "${shape[@]}" $M/t > /dev/null
	sync -f $M
	echo "== ${shape[*]} | rsync -r --delete-only $* empty/ t/"
	/usr/bin/time -f "peak RSS %M KiB, %e s elapsed" $R -r --delete-only "$@" $M/empty/ $M/t/ > /tmp/b49/mem-out.txt 2>&1
	tail -n 2 /tmp/b49/mem-out.txt
	echo "left: $(find $M/t | wc -l) (t itself: 1)"
	umount $M; rm -f $IMG
}
date
one flat 10000000 --
one flat 10000000 -- --info=progress2
one wide 10000 1000 --
one wide 10000 1000 -- --delete-schedule=global
one wide 10000 1000 -- --delete-schedule=dirs
one wide 10000 1000 -- --info=progress2
date

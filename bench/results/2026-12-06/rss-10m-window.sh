#!/bin/bash
# Peak RSS of rsync-de deleting 10,000 x 1,000 files under the global
# schedule, whose windows now take the directories the fds allow
# (ef4304d), started under a soft open-file limit of 1,024 as from most
# shells: rsync raises it (the "open files" lines, read mid-run from
# /proc).  ext4 on an image in /dev/shm, as rss-10m.sh.
set -u
R=${R:-/tmp/s54/new/rsync}
IMG=/dev/shm/mem10m.img
M=/tmp/s54/mem-mnt
mkdir -p $M
rm -f $IMG; truncate -s 20G $IMG
mkfs.ext4 -q -F -N 10600000 $IMG && mount -o loop $IMG $M || exit 1
mkdir -p $M/empty
/work/main/bench/mktree -s wide 10000 1000 $M/t > /dev/null
sync -f $M
date
echo "== wide 10000 1000 | ulimit -Sn 1024; rsync -r --delete-only --delete-schedule=global empty/ t/"
(ulimit -Sn 1024; /usr/bin/time -f "peak RSS %M KiB, %e s elapsed" $R -r --delete-only \
	--delete-schedule=global $M/empty/ $M/t/ > /tmp/s54/mem-out.txt 2>&1) &
sleep 30
for p in $(pgrep -x rsync); do echo "pid $p: $(grep 'open files' /proc/$p/limits)"; done
wait
tail -n 2 /tmp/s54/mem-out.txt
echo "left: $(find $M/t | wc -l) (t itself: 1)"
date
umount $M; rm -f $IMG

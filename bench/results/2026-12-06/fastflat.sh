#!/bin/bash
# fastflat.sh: one directory of N shuffled files on a loop ext4 (fast disk,
# 4 MiB journal), rsync --delete-only, build NEW against build OLD,
# alternated (lab notes of 2026-12-06, "On a fast disk").  Root.
#   NEW=./rsync OLD=/path/to/older/rsync fastflat.sh
N=${N:-400000}
NEW=${NEW:-./rsync}; OLD=${OLD:?OLD=the older rsync}
IMG=/var/tmp/ff.img; M=$(mktemp -d); MKTREE=$(dirname "$0")/../../mktree
for round in 1 2 3 4; do
  for b in new old; do
    [ $((round % 2)) = 0 ] && b=$([ $b = new ] && echo old || echo new)
    R=$([ $b = new ] && echo "$NEW" || echo "$OLD")
    rm -f $IMG; truncate -s 4G $IMG; mkfs.ext4 -q -F -J size=4 -N $((N+20000)) $IMG; mount -o loop $IMG $M
    mkdir $M/empty; $MKTREE -s flat $N $M/t >/dev/null; sync -f $M; echo 3 > /proc/sys/vm/drop_caches
    t0=$(date +%s.%N); $R -r --delete-only $M/empty/ $M/t/; sync -f $M; t1=$(date +%s.%N)
    echo "round $round $b $(echo "$t1 - $t0" | bc)"
    umount $M
  done
done
rm -f $IMG; rmdir $M

#!/bin/sh
# ratio.sh - time de-rm against rm -rf on identical fresh trees.
#
#   sudo tools/ratio.sh [-r RUNS] [-s "flat wide deep"]
#                       [-f "ext4 xfs btrfs tmpfs"] [-m "cold warm"]
#                       [-d "DE-RM ARGS"] [-p "PREFIX"] [-w WORKDIR]
# Tree sizes: FLAT="flat 200000" WIDE="wide 300 1000" DEEP="deep 2000 50"
# in the environment override the defaults.
#
# For each file system (a 4 GiB loop image for ext4/xfs/btrfs, a tmpfs
# mount), shape and cache mode, it alternates de-rm and rm -rf RUNS times;
# before every timed run a fresh tree is made with bench/mktree, then
# "sync" and, for cold runs, "echo 3 > /proc/sys/vm/drop_caches".  Prints
# per-run seconds, the ratio of the medians de-rm/rm and the median of the
# per-pair ratios (each de-rm run against the rm run right after it, which
# suffers less from load that changes during the run); below 1 means de-rm
# is faster.  PREFIX runs before both tools (e.g. "nice -n -15" on a
# loaded machine).  Needs root; cleans up after itself.  Run "make tools"
# first.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=3
shapes="flat wide deep"
fss="ext4 xfs tmpfs"
modes="cold"
derm_args=""
prefix=""
work=${TMPDIR:-/tmp}/de-ratio.$$
FLAT=${FLAT:-"flat 200000"}
WIDE=${WIDE:-"wide 300 1000"}
DEEP=${DEEP:-"deep 2000 50"}
while getopts r:s:f:m:d:p:w: o; do
	case $o in
	r) runs=$OPTARG ;;
	s) shapes=$OPTARG ;;
	f) fss=$OPTARG ;;
	m) modes=$OPTARG ;;
	d) derm_args=$OPTARG ;;
	p) prefix=$OPTARG ;;
	w) work=$OPTARG ;;
	*) exit 2 ;;
	esac
done
mnt=$work/mnt
img=$work/img
mkdir -p "$mnt"
cleanup() {
	umount "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "# $(uname -sr), $(nproc) CPUs, $(date -u '+%F %T'), load $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() {	# prints seconds
	s=$(date +%s.%N)
	$prefix "$@"
	e=$(date +%s.%N)
	echo "$s $e" | awk '{printf "%.3f\n", $2 - $1}'
}
for fs in $fss; do
	case $fs in
	tmpfs) mount -t tmpfs -o size=3g tmpfs "$mnt" ;;
	ext4) truncate -s 4G "$img"; mkfs.ext4 -q -F -N 1200000 "$img"
	      mount -o loop "$img" "$mnt" ;;
	xfs) truncate -s 4G "$img"; mkfs.xfs -q -f "$img"
	     mount -o loop "$img" "$mnt" ;;
	btrfs) truncate -s 4G "$img"; mkfs.btrfs -q -f "$img" >/dev/null
	       mount -o loop "$img" "$mnt" ;;
	*) echo "unknown file system $fs" >&2; exit 2 ;;
	esac
	echo "# $(grep " $mnt " /proc/mounts)"
	for shape in $shapes; do
		case $shape in
		flat) spec=$FLAT ;; wide) spec=$WIDE ;; deep) spec=$DEEP ;;
		esac
		for mode in $modes; do
			: >"$work/de" ; : >"$work/rm"
			i=0
			while [ $i -lt "$runs" ]; do
				for tool in de rm; do
					"$here/../../bench/mktree" $spec "$mnt/t"
					sync
					if [ "$mode" = cold ]; then
						echo 3 >/proc/sys/vm/drop_caches
					fi
					if [ $tool = de ]; then
						t=$(timeit "$here/de-rm" $derm_args "$mnt/t")
					else
						t=$(timeit rm -rf "$mnt/t")
					fi
					echo "$t" >>"$work/$tool"
				done
				i=$((i + 1))
			done
			d=$(median <"$work/de"); r=$(median <"$work/rm")
			p=$(paste "$work/de" "$work/rm" | awk '{printf "%.3f\n", $1 / $2}' | median)
			echo "$fs $shape ($spec) $mode: de-rm $(tr '\n' ' ' <"$work/de")| rm $(tr '\n' ' ' <"$work/rm")| median ratio $(echo "$d $r" | awk '{printf "%.2f", $1 / $2}') pair ratio $p"
		done
	done
	umount "$mnt"
	rm -f "$img"
done

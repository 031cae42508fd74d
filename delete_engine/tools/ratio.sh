#!/bin/sh
# ratio.sh - time de-rm against rm -rf on identical fresh trees.
#
#   sudo tools/ratio.sh [-r RUNS] [-s "flat wide deep"] [-f "ext4 xfs tmpfs"]
#                       [-d "DE-RM ARGS"] [-w WORKDIR]
# Tree sizes: FLAT="flat 200000" WIDE="wide 300 1000" DEEP="deep 2000 50"
# in the environment override the defaults.
#
# For each file system (a 4 GiB loop image for ext4/xfs, a tmpfs mount) and
# shape, it alternates de-rm and rm -rf RUNS times; before every timed run a
# fresh tree is made with bench/mktree, then "sync; echo 3 >
# /proc/sys/vm/drop_caches".  Prints per-run seconds and the median ratio
# de-rm/rm (below 1 means de-rm is faster).  Needs root; cleans up after
# itself.  Run "make tools" first.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=3
shapes="flat wide deep"
fss="ext4 xfs tmpfs"
derm_args=""
work=${TMPDIR:-/tmp}/de-ratio.$$
FLAT=${FLAT:-"flat 200000"}
WIDE=${WIDE:-"wide 300 1000"}
DEEP=${DEEP:-"deep 2000 50"}
while getopts r:s:f:d:w: o; do
	case $o in
	r) runs=$OPTARG ;;
	s) shapes=$OPTARG ;;
	f) fss=$OPTARG ;;
	d) derm_args=$OPTARG ;;
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

echo "# $(uname -sr), $(nproc) CPUs, $(date -u +%F)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() {	# prints seconds
	s=$(date +%s.%N)
	"$@"
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
	esac
	for shape in $shapes; do
		case $shape in
		flat) spec=$FLAT ;; wide) spec=$WIDE ;; deep) spec=$DEEP ;;
		esac
		: >"$work/de" ; : >"$work/rm"
		i=0
		while [ $i -lt "$runs" ]; do
			for tool in de rm; do
				"$here/../../bench/mktree" $spec "$mnt/t"
				sync; echo 3 >/proc/sys/vm/drop_caches
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
		echo "$fs $shape ($spec): de-rm $(tr '\n' ' ' <"$work/de")| rm $(tr '\n' ' ' <"$work/rm")| median ratio $(echo "$d $r" | awk '{printf "%.2f", $1 / $2}')"
	done
	umount "$mnt"
	rm -f "$img"
done

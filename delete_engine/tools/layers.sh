#!/bin/sh
# layers.sh [OBJ...] - the engine's call graph between files, from nm.
#
# A file calls another where its object references a symbol (nm: U) that
# the other's object defines.  Prints each file and the files it calls,
# callers above callees, then checks that the graph has no cycle: a call
# back up the layers (sys.c into run.c, say) would make one, and exits 1
# naming it, with the symbols behind each of its edges.  Calls through a
# function pointer (ctx->shed_fd, ctx->run.rep.tick) reference no symbol and do
# not count: they are how a lower layer reaches a higher one (README.md,
# "Layers").  OBJ: the library's objects, by default build/*.o; NM: the
# nm to use (nm).  Exit 2 when an object cannot be read.
set -u
NM=${NM:-nm}
if [ $# -eq 0 ]; then
	set -- "$(dirname "$0")"/../build/*.o
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/layers.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

# One line per global symbol: file, symbol, nm's type letter.
for o in "$@"; do
	if [ ! -f "$o" ] || ! $NM -P -g "$o" >"$tmp/nm"; then
		echo "layers: cannot read $o (make first?)" >&2
		exit 2
	fi
	f=$(basename "$o" .o).c
	echo "$f" >>"$tmp/files"
	awk -v f="$f" 'NF >= 2 { print f, $1, $2 }' "$tmp/nm" >>"$tmp/syms"
done
: >>"$tmp/syms"

awk '
FILENAME == ARGV[1] { file[++nf] = $1; next }
# U: undefined; w and v: weak undefined.  The rest define the symbol.
$3 == "U" || $3 == "w" || $3 == "v" { ref[++nr] = $1 SUBSEP $2; next }
!($2 in def) { def[$2] = $1 }

function sort_names(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
}

# Depth-first, in name order; on a file still on the path, the cycle is
# the path from it.  level: the longest chain of calls below a file.
function visit(f,    i, c, k) {
	state[f] = 1
	path[++depth] = f
	for (i = 1; i <= nf && !cycle; i++) {
		c = file[i]
		if (!((f, c) in edge))
			continue
		if (state[c] == 1) {
			for (k = depth; path[k] != c; k--)
				;
			for (; k <= depth; k++)
				cycle = cycle path[k] " -> "
			cycle = cycle c
			return
		}
		if (state[c] == 0)
			visit(c)
		if (level[c] + 1 > level[f])
			level[f] = level[c] + 1
	}
	state[f] = 2
	depth--
}

END {
	sort_names(file, nf)
	for (i = 1; i <= nr; i++) {
		split(ref[i], r, SUBSEP)
		if (!(r[2] in def) || def[r[2]] == r[1])
			continue
		e = r[1] SUBSEP def[r[2]]
		edge[e] = 1
		why[e] = why[e] " " r[2]
	}
	for (i = 1; i <= nf && !cycle; i++)
		if (state[file[i]] == 0)
			visit(file[i])

	# Callers first: by level, highest first (all 0 after a cycle).
	for (i = 1; i <= nf; i++) {
		lv = cycle ? 0 : level[file[i]]
		order[i] = sprintf("%04d %s", 9999 - lv, file[i])
	}
	sort_names(order, nf)
	for (i = 1; i <= nf; i++) {
		f = substr(order[i], 6)
		line = sprintf("%-8s ->", f)
		for (j = 1; j <= nf; j++)
			if ((f, file[j]) in edge)
				line = line " " file[j]
		print line
	}
	if (!cycle) {
		printf "layers: no cycle among the %d files\n", nf
		exit 0
	}
	printf "layers: cycle: %s\n", cycle
	n = split(cycle, step, " -> ")
	for (i = 1; i < n; i++)
		printf "  %s -> %s:%s\n", step[i], step[i + 1],
		       why[step[i], step[i + 1]]
	exit 1
}
' "$tmp/files" "$tmp/syms"

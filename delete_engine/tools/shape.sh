#!/bin/sh
# shape.sh [DIR] - the engine's size limits, checked from its sources:
# no library file over 700 lines, no function over 60 (tools/rsync-rm.c's
# too), and struct de__node and struct de__run with at most 20 direct
# declarations each (the rest in named parts: internal.h).  A newcomer reads a file, a function and a
# struct whole; past these sizes they stop doing so.  Prints what passes
# a limit and exits 1, or says all is within them.  DIR: the engine's
# directory (this script's parent by default).
set -u
dir=${1:-$(dirname "$0")/..}
awk '
FNR == 1 { if (lib && lines > 700) bad(fname ": " lines " lines");
	   fname = FILENAME; sub(".*/", "", fname); lines = 0
	   lib = FILENAME !~ /\/tools\// }
{ lines++ }
# A function: a line at column 0 with a "(" that does not end in ";",
# to the first "}" at column 0.
FILENAME ~ /\.c$/ && /^[a-z].*\(/ && !/;[ \t]*$/ &&
    !/^(typedef|struct|enum|static const)/ {
	start = FNR; name = $0; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name) }
/^}/ && start { if (FNR - start > 60)
		    bad(fname ": " name "() is " FNR - start " lines");
		start = 0 }
# Direct declarations: the ";" at depth 1 of the two structs.
/^struct de__(node|run) \{/ { s = $2; depth = 1; decls = 0; next }
s != "" { line = $0; sub(/\/\*.*/, "", line)
	  if (line ~ /^[ \t]*\*/) next
	  n = gsub(/\{/, "{", line); m = gsub(/\}/, "}", line)
	  depth += n - m
	  if (depth == 1 && line ~ /;/) decls++
	  if (depth == 0) { if (decls > 20)
				bad("struct " s ": " decls " direct declarations")
			    else
				print "shape: struct " s ": " decls " direct declarations"
			    s = "" } }
function bad(msg) { print "shape: " msg; failed = 1 }
END { if (lib && lines > 700) bad(fname ": " lines " lines")
      if (failed) exit 1
      print "shape: files, functions and structs within their limits" }
' "$dir"/*.c "$dir"/*.h "$dir"/tools/*.c

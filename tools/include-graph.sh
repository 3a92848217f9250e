#!/bin/sh
# include-graph: finds circles among the C modules of a source folder.
#
#   tools/include-graph.sh [DIR]     (DIR defaults to src)
#
# A module is NAME.c with its NAME.h; module A depends on module B when
# A.c or A.h has `#include "B.h"` (only quoted includes of headers in DIR
# count; <system> headers do not). Prints every circle found, one a line
# ("host -> lua_loop -> host"), and exits 1 if there is one; prints nothing
# and exits 0 when the graph has none. Plain sh and awk.
set -u
DIR=${1:-src}
[ -d "$DIR" ] || { echo "include-graph: no folder '$DIR'" >&2; exit 2; }

for f in "$DIR"/*.c "$DIR"/*.h; do
  [ -f "$f" ] || continue
  from=$(basename "$f"); from=${from%.*}
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while read -r inc; do
      to=$(basename "$inc"); to=${to%.h}
      [ -f "$DIR/$to.h" ] && [ "$to" != "$from" ] && echo "$from $to"
    done
done | sort -u | awk '
  { edges[$1] = edges[$1] " " $2; nodes[$1] = 1; nodes[$2] = 1 }
  # Depth-first search; a back edge to a node on the current path is a circle.
  function visit(n,    parts, k, i, j, m, cycle) {
    state[n] = 1; path[++depth] = n
    k = split(edges[n], parts, " ")
    for (i = 1; i <= k; i++) {
      m = parts[i]
      if (state[m] == 1) {
        cycle = ""
        for (j = depth; path[j] != m; j--) cycle = " -> " path[j] cycle
        print m cycle " -> " m
        found = 1
      } else if (state[m] == 0) {
        visit(m)
      }
    }
    depth--; state[n] = 2
  }
  END {
    for (n in nodes) state[n] = 0
    for (n in nodes) if (state[n] == 0) visit(n)
    exit found ? 1 : 0
  }'

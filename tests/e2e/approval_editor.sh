#!/bin/sh
# An $EDITOR for approval_test.sh: edits the arguments file it is given.
#   EDIT_MODE=ls       the command becomes "ls data"
#   EDIT_MODE=broken   the first edit leaves text that is not JSON, the next one "ls data"
#                      (EDIT_COUNT names a file that counts the edits)
file=$1
n=0
[ -n "${EDIT_COUNT:-}" ] && [ -f "$EDIT_COUNT" ] && n=$(cat "$EDIT_COUNT")
n=$((n + 1))
[ -n "${EDIT_COUNT:-}" ] && echo "$n" > "$EDIT_COUNT"
if [ "${EDIT_MODE:-ls}" = broken ] && [ "$n" -eq 1 ]; then
  printf '{"command": "ls data"' > "$file"
else
  sed -i 's/rm -rf data/ls data/; s/{"command": "ls data"$/{"command": "ls data"}/' "$file"
fi

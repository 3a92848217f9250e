# `luagent help`, `luagent help TOPIC`, `luagent COMMAND --help` and the man
# page (`luagent help --man`, installed by `make install`): all from one
# source (lua/luagent/cli/help_pages.lua). Every command of src/main.c has a
# page, every option of `run` is on its page, every topic that is not a
# command (what left the README) has a page, the man page renders without
# warnings and has a section for each; README.md stays a front door (at most
# 260 lines) whose every `luagent help X` names a topic that exists.
. tests/e2e/lib.sh

COMMANDS="run approve new runs sandbox trace eval cache doctor meta repl version help"
GUIDES="start recipes tools mcp structured approval models sandboxes network pool fork engines kubernetes outputs traces checks faults errors"
TOPICS="$COMMANDS $GUIDES"

# page_ok TOPIC: `luagent help TOPIC` prints its page: title, usage, and its sections
page_ok() {
  run_luagent help "$1"
  status_is 0 || return 1
  head -1 "$TMP/stdout" | grep -q "^luagent $1: " || { echo "first line: $(head -1 "$TMP/stdout")"; return 1; }
  stdout_has "^usage: luagent $1" && stdout_has "^exit status:" && [ ! -s "$TMP/stderr" ]
}
for t in $COMMANDS; do check "'luagent help $t' prints its page (what, usage, exit status)" page_ok "$t"; done

# topic_ok TOPIC: `luagent help TOPIC` prints a topic's page: title, text, where to read more
topic_ok() {
  run_luagent help "$1"
  status_is 0 || return 1
  head -1 "$TMP/stdout" | grep -q "^luagent help $1: " || { echo "first line: $(head -1 "$TMP/stdout")"; return 1; }
  [ "$(wc -l < "$TMP/stdout")" -ge 8 ] && stdout_has "^See also: " && [ ! -s "$TMP/stderr" ]
}
for t in $GUIDES; do check "'luagent help $t' prints the topic's page" topic_ok "$t"; done
summary_lists_topics() {
  want="Topics: $(echo $GUIDES | sed 's/ /, /g')."
  "$LUAGENT" help | tr '\n' ' ' | grep -qF "$want" || { echo "the summary does not say: $want"; return 1; }
}
check "the summary lists every topic" summary_lists_topics

# The error kinds on 'luagent help errors' are the catalogue's, every one of them.
kinds_on_page() {
  "$LUAGENT" run -q /dev/stdin > "$TMP/kinds" <<'LUA'
for kind in pairs(require("luagent.errors").KINDS) do print(kind) end
LUA
  "$LUAGENT" help errors > "$TMP/errors.page"
  [ "$(wc -l < "$TMP/kinds")" -ge 20 ] || { echo "found $(wc -l < "$TMP/kinds") kinds"; return 1; }
  while read -r k; do grep -q "^  $k " "$TMP/errors.page" || { echo "$k is not on the errors page"; return 1; }; done < "$TMP/kinds"
}
check "'luagent help errors' lists every kind of luagent.errors.KINDS" kinds_on_page

# ---- the README: a front door that links the rest ----
readme_links() {
  links=$(grep -o 'luagent help [a-z][a-z_]*' README.md | sed 's/luagent help //' | sort -u)
  [ "$(echo "$links" | wc -w)" -ge 8 ] || { echo "README.md links $(echo "$links" | wc -w) topics"; return 1; }
  for t in $links; do
    "$LUAGENT" help "$t" > /dev/null 2>&1 || { echo "README.md links 'luagent help $t', which is no topic"; return 1; }
  done
}
check "every 'luagent help X' in README.md names a topic that exists" readme_links
every_topic_linked() {
  for t in $GUIDES; do grep -q "luagent help $t\b" README.md || { echo "README.md does not link 'luagent help $t'"; return 1; }; done
}
check "... and README.md links every topic (what left it stays reachable)" every_topic_linked
check "README.md is a front door: at most 260 lines" sh -c "
  n=\$(wc -l < README.md); [ \$n -le 260 ] || { echo \"README.md has \$n lines\"; exit 1; }"

run_luagent help run
cp "$TMP/stdout" "$TMP/run.page"
check "the run page has options, examples and environment" sh -c "
  grep -q '^options:' $TMP/run.page && grep -q '^examples:' $TMP/run.page && grep -q '^environment:' $TMP/run.page &&
  grep -q '^  LUAGENT_RUNS_DIR ' $TMP/run.page && grep -q '^  130 ' $TMP/run.page"

# Every option in src/main.c's RUN_OPTIONS table is on the run page.
run_options() { sed -n '/RUN_OPTIONS\[\] = {/,/^};/p' src/main.c | grep -o '{"-[^"]*"' | tr -d '{"'; }
options_on_page() {
  [ "$(run_options | wc -l)" -ge 10 ] || { echo "found $(run_options | wc -l) options in src/main.c"; return 1; }
  for o in $(run_options); do grep -q -- "$o" "$TMP/run.page" || { echo "$o is not on the run page"; return 1; }; done
}
check "every option of 'run' (src/main.c RUN_OPTIONS) is on its page" options_on_page

# Every command of src/main.c's COMMANDS table has a page, and a line in the summary.
commands() { sed -n '/COMMANDS\[\] = {/,/^};/p' src/main.c | grep -o '{"[a-z][^"]*"' | tr -d '{"'; }
every_command_has_a_page() {
  [ "$(commands | wc -l)" -ge 11 ] || { echo "found $(commands | wc -l) commands in src/main.c"; return 1; }
  "$LUAGENT" help > "$TMP/summary"
  for c in $(commands); do
    "$LUAGENT" help "$c" > /dev/null 2>&1 || { echo "no page for $c"; return 1; }
    grep -q "^  $c" "$TMP/summary" || { echo "$c is not in the summary"; return 1; }
  done
}
check "every command of src/main.c has a page and a line in the summary" every_command_has_a_page

same_as_help() {
  "$LUAGENT" help "$1" > "$TMP/a" 2>&1
  "$LUAGENT" "$1" "$2" > "$TMP/b" 2>&1 || { echo "'$1 $2' exited $?"; return 1; }
  cmp "$TMP/a" "$TMP/b"
}
check "'luagent run --help' prints the run page" same_as_help run --help
check "'luagent eval -h' prints the eval page" same_as_help eval -h
check "'luagent sandbox --help' prints the sandbox page" same_as_help sandbox --help

run_luagent help frobnicate
check "an unknown topic exits 2 listing the topics" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && [ ! -s $TMP/stdout ] &&
  grep -q \"no topic 'frobnicate'; the topics: $(echo $TOPICS | sed 's/ /, /g')\$\" $TMP/stderr"
run_luagent help evl
check "... with the nearest topic for a typo" sh -c "[ \"\$(cat $TMP/status)\" = 2 ] && grep -q \"did you mean 'eval'?\" $TMP/stderr"

run_luagent help
cp "$TMP/stdout" "$TMP/summary"
run_luagent
check "'luagent' alone prints the same summary on stderr and exits 2" sh -c "
  [ \"\$(cat $TMP/status)\" = 2 ] && cmp $TMP/summary $TMP/stderr && [ ! -s $TMP/stdout ]"
run_luagent --help
check "'luagent --help' prints the summary" sh -c "[ \"\$(cat $TMP/status)\" = 0 ] && cmp $TMP/summary $TMP/stdout"

# ---- the man page ----
if ! command -v groff > /dev/null || ! command -v man > /dev/null; then tools/deps.sh groff-base man-db > /dev/null 2>&1; fi
run_luagent help --man
cp "$TMP/stdout" "$TMP/luagent.1"
check "'luagent help --man' writes roff: the title, NAME, SYNOPSIS, COMMANDS, EXIT STATUS, ENVIRONMENT" sh -c "
  [ \"\$(cat $TMP/status)\" = 0 ] && grep -q '^\.TH LUAGENT 1 ' $TMP/luagent.1 &&
  for s in NAME SYNOPSIS DESCRIPTION COMMANDS 'EXIT STATUS' ENVIRONMENT FILES; do grep -q \"^\.SH \$s\" $TMP/luagent.1 || exit 1; done"
check "... in ASCII (plain roff, whatever the locale)" sh -c "! LC_ALL=C grep -n '[^[:print:][:space:]]' $TMP/luagent.1"
check "groff renders it without a warning" sh -c "
  groff -man -Tutf8 -ww -z $TMP/luagent.1 2> $TMP/groff.err && [ ! -s $TMP/groff.err ] || { cat $TMP/groff.err; exit 1; }"
MANWIDTH=80 man --warnings -l "$TMP/luagent.1" > "$TMP/man.txt" 2> "$TMP/man.err"
echo $? > "$TMP/man.status"
mentions_every_command() {
  [ "$(cat "$TMP/man.status")" = 0 ] && [ ! -s "$TMP/man.err" ] || { echo "man: $(cat "$TMP/man.err")"; return 1; }
  for t in $COMMANDS; do grep -q "^   luagent $t\$" "$TMP/man.txt" || { echo "no section for luagent $t"; return 1; }; done
  grep -q -- '--set key=value' "$TMP/man.txt" && grep -q 'OPENAI_BASE_URL' "$TMP/man.txt"
}
check "'man -l luagent.1' renders it without a warning, with a section for every command" mentions_every_command
has_topics() {
  grep -q '^TOPICS$' "$TMP/man.txt" || { echo "no TOPICS section"; return 1; }
  for t in $GUIDES; do grep -q "^   $t\$" "$TMP/man.txt" || { echo "no section for the topic $t"; return 1; }; done
}
check "... and a section for every topic, under TOPICS" has_topics

# `make install` puts the man page where `man luagent` finds it (only when the
# binary under test is the one the Makefile builds, and it is up to date).
if [ "$LUAGENT" = ./luagent ] && make -q luagent 2> /dev/null; then
  make -s install DESTDIR="$TMP/inst" PREFIX=/usr > "$TMP/install.out" 2>&1
  check "make install puts luagent.1 in share/man/man1, the same page as 'luagent help --man'" sh -c "
    cmp $TMP/luagent.1 $TMP/inst/usr/share/man/man1/luagent.1 && [ -x $TMP/inst/usr/bin/luagent ] &&
    MANPATH=$TMP/inst/usr/share/man man -w luagent | grep -q '$TMP/inst/usr/share/man/man1/luagent.1' ||
    { cat $TMP/install.out; exit 1; }"
else
  echo "ok - $SUITE: make install puts the man page in share/man/man1 # SKIP the binary under test is not an up-to-date ./luagent"
fi

# Golden pages: what `luagent help`, every `luagent help TOPIC` and the man page say, as they
# said it when the prose moved out of Lua into doc/help/*.md (tests/fixtures/help/): a change
# of content shows here as a diff. After changing a page on purpose, write them again with
#   tests/fixtures/help/refresh.sh
same_as_golden() {
  "$LUAGENT" $1 > "$TMP/page" 2>&1
  diff -u "tests/fixtures/help/$2" "$TMP/page" > "$TMP/page.diff" || { head -40 "$TMP/page.diff"; return 1; }
}
check "'luagent help' says what tests/fixtures/help/summary.txt holds" same_as_golden help summary.txt
for t in $TOPICS; do
  check "'luagent help $t' says what tests/fixtures/help/$t.txt holds" same_as_golden "help $t" "$t.txt"
done
check "'luagent help --man' is tests/fixtures/help/luagent.1" same_as_golden "help --man" luagent.1

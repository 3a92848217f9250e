# Headless Chromium (Debian's `chromium`) for tests of pages, sourced after lib.sh.
#   chromium_ready           0 when Chromium can run: installs Debian's chromium when it is
#                            missing (tools/deps.sh, as tests/run installs other packages);
#                            else 1, with the reason in $CHROMIUM_WHY
#   chromium_skip NAME...    "ok - SUITE: NAME # SKIP reason" for each check that cannot run
#   chromium_screenshot URL PNG [W,H]   a screenshot of the page (default 1280,2000)
#   chromium_dom URL         the page's DOM after it loaded, on stdout
# Each start uses a new empty profile, no sandbox (tests run as root), no GPU,
# nothing fetched in the background, and a time limit.
CHROMIUM_WHY=""

chromium_ready() {
  if ! command -v chromium > /dev/null 2>&1; then
    if ! tools/deps.sh chromium > "$TMP/chromium-install.log" 2>&1; then
      CHROMIUM_WHY="chromium is not installed and could not be installed ($(tail -1 "$TMP/chromium-install.log"))"
      return 1
    fi
    if ! command -v chromium > /dev/null 2>&1; then
      CHROMIUM_WHY="the chromium package is installed, but no chromium command is on PATH"
      return 1
    fi
  fi
  if ! chromium --version > "$TMP/chromium-version.log" 2>&1; then
    CHROMIUM_WHY="chromium does not start: $(tail -1 "$TMP/chromium-version.log")"
    return 1
  fi
  return 0
}

chromium_skip() {
  for name in "$@"; do echo "ok - $SUITE: $name # SKIP $CHROMIUM_WHY"; done
}

# chromium_run ARGS...: one headless Chromium with a fresh profile; its messages in $TMP/chromium.err
chromium_run() {
  profile=$(mktemp -d "$TMP/chromium-profile-XXXXXX")
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    "$@" 2> "$TMP/chromium.err"
}

chromium_screenshot() {
  chromium_run --screenshot="$2" --window-size="${3:-1280,2000}" --hide-scrollbars "$1" > /dev/null
}

chromium_dom() {
  chromium_run --dump-dom "$1"
}

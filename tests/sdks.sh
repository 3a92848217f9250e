#!/bin/sh
# Installs the official OpenAI and Anthropic SDKs (npm openai and
# @anthropic-ai/sdk, at the versions tests/sdks.json pins) into tests/sdks/
# (not in git) when they are missing or the pins changed, from the npm
# registry; node and npm come from Debian (tools/deps.sh) when missing.
# Prints the folder. tests/lua/sdk_parity_spec.lua runs it.
set -eu
cd "$(dirname "$0")/.."
DIR=tests/sdks
if ! cmp -s tests/sdks.json "$DIR/package.json" || [ ! -f "$DIR/installed" ]; then
  { command -v node && command -v npm; } >/dev/null 2>&1 || tools/deps.sh nodejs npm >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp tests/sdks.json "$DIR/package.json"
  (cd "$DIR" && npm install --no-package-lock --no-audit --no-fund --loglevel=error) >&2
  touch "$DIR/installed"
fi
echo "$DIR"

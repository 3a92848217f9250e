#!/bin/sh
# Installs the reference MCP servers the MCP tests talk to into
# tests/mcp-servers/ (not in git) when they are missing, with npm from the
# npm registry: @modelcontextprotocol/server-everything and
# @modelcontextprotocol/server-filesystem, at versions checked to run on
# Debian 12's node (18.20) and on newer ones. Prints the folder.
# node and npm come from Debian (tools/deps.sh) when they are missing.
#
# Usage: tests/mcp-servers.sh        (tests/lua/mcp_servers.lua runs it when needed)
set -eu
cd "$(dirname "$0")/.."
DIR=tests/mcp-servers
EVERYTHING=2026.1.26
FILESYSTEM=2026.1.14
STAMP="$DIR/installed-$EVERYTHING-$FILESYSTEM"
if [ ! -f "$STAMP" ]; then
  { command -v node && command -v npm; } >/dev/null 2>&1 || tools/deps.sh nodejs npm >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING" \
    "@modelcontextprotocol/server-filesystem@$FILESYSTEM" >&2
  touch "$STAMP"
fi
echo "$DIR"

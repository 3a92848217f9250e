#!/bin/sh
# Installs the reference MCP servers the MCP tests talk to into
# tests/mcp-servers/ (not in git) when they are missing or tests/mcp-servers.json
# changed, with npm from the npm registry: @modelcontextprotocol/server-everything
# and @modelcontextprotocol/server-filesystem, at the versions
# tests/mcp-servers.json pins (checked to run on Debian 12's node 18.20 and on
# node 20). Prints the folder. node and npm come from Debian (tools/deps.sh)
# when they are missing.
#
# Usage: tests/mcp-servers.sh        (tests/lua/mcp_servers.lua runs it when needed)
set -eu
cd "$(dirname "$0")/.."
DIR=tests/mcp-servers
if ! cmp -s tests/mcp-servers.json "$DIR/package.json" || [ ! -f "$DIR/installed" ]; then
  { command -v node && command -v npm; } >/dev/null 2>&1 || tools/deps.sh nodejs npm >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp tests/mcp-servers.json "$DIR/package.json"
  (cd "$DIR" && npm install --no-package-lock --no-audit --no-fund --loglevel=error) >&2
  touch "$DIR/installed"
fi
echo "$DIR"

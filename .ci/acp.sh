#!/usr/bin/env bash
# zeroclaw acp with the official ACP TypeScript SDK (@agentclientprotocol/sdk, pinned by
# test/acp-ts/package-lock.json) as the editor: the script drives the built binary as Zed
# does and checks every frame it writes against the SDK's JSON schema (ajv).
set -euo pipefail
cd "$(dirname "$0")/.."
printf '\n=== %s\n' "zeroclaw acp against the official ACP TypeScript SDK"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
node --version
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/zeroclaw" ./cmd/zeroclaw
(cd test/acp-ts && npm ci --no-audit --no-fund --loglevel=error)
[ -d test/mcp/node_modules ] || (cd test/mcp && npm ci --no-audit --no-fund --loglevel=error) # the editor's MCP server
node test/acp-ts/acp.test.mjs "$work/zeroclaw"

printf '\n=== %s\n' "zeroclaw acp driven by acpx 0.19.1 (modes, models, status)"
# `npm install` (which installs the lockfile's versions), not `npm ci`: acpx depends on
# @openclaw/fs-safe, whose optional per-platform packages for other systems the registry
# here does not serve, so they are absent from the lockfile and `npm ci` refuses it.
(cd test/acpx && npm install --no-save --no-audit --no-fund --loglevel=error)
test/acpx/acpx.test.sh "$work/zeroclaw"

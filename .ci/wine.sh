#!/usr/bin/env bash
# The Windows stage of CI (docs/protocol.md, "Windows"): the Windows builds of the daemon and its clients,
# end to end on the named pipe, under Wine. It installs Wine, makes a fresh prefix, adds
# the one DLL that bookworm's Wine 8.0 lacks for Go programs, and runs the Windows tests
# of the endpoint package and the pipe end-to-end tests with `go test -exec`.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
export PATH="/usr/local/go/bin:$PATH"
step() { printf '\n=== %s\n' "$*"; }
start=$(date +%s)

step "wine: packages"
if ! dpkg -s wine wine64 binutils >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then echo "wine, wine64 or binutils is missing; run as root to install them"; exit 1; fi
  apt-get update -qq
  # Console programs need no fonts, sound, video or GStreamer: no recommends.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine wine64 binutils >/dev/null
fi
WINEDEBUG=-all wine --version

work=$(mktemp -d)
export WINEPREFIX="$work/prefix" WINEARCH=win64 WINEDEBUG=-all
# No display: Wine runs console programs only. Skip the Mono and Gecko installers.
unset DISPLAY WAYLAND_DISPLAY
export WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() {
  wineserver -k 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step "wine: a fresh prefix"
mkdir -p "$WINEPREFIX"
wineserver -p # one server for the whole stage, not one per test process
wineboot -i >/dev/null 2>&1

# Go 1.22+ programs import ProcessPrng from bcryptprimitives.dll, which Wine has only
# since 8.13. The same random source is advapi32's SystemFunction036 (RtlGenRandom):
# a DLL that forwards the one export to it lets every Go program start.
sys32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -e "$sys32/bcryptprimitives.dll" ]; then
  printf 'LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng = advapi32.SystemFunction036\n' >"$work/bcryptprimitives.def"
  ld -m i386pep --dll -e 0 --no-insert-timestamp -o "$sys32/bcryptprimitives.dll" "$work/bcryptprimitives.def"
fi

step "wine: the Windows build of zeroclaw"
GOOS=windows go build -o "$work/zeroclaw.exe" ./cmd/zeroclaw
wine "$work/zeroclaw.exe" version

step "wine: Windows tests of the endpoint and the pipe end to end"
# The end-to-end tests run this binary (a Windows path: Wine maps / to Z:).
ZEROCLAW_TEST_BINARY="Z:$work/zeroclaw.exe" \
  GOOS=windows go test -count=1 -timeout 5m -exec "$PWD/.ci/wine-exec" ./internal/endpoint/...

step "wine: done in $(( $(date +%s) - start )) s"

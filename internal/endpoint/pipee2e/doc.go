// Package pipee2e holds the end-to-end tests of the Windows named pipe: the Windows
// build of zeroclaw serving on the pipe, driven from this second process by the
// Windows build of its own client (status, rpc, chat) and by a byte-level pipe
// client; and the console events that stop the daemon. The tests run on Windows,
// and in CI under Wine (.ci/wine.sh); on other systems the package is empty.
package pipee2e

//go:build race

package jsonrpc

// raceEnabled: the race detector's sync.Pool drops buffers, so allocation counts
// do not hold under it.
const raceEnabled = true

// Package scan holds the byte scanning the hand-written JSON fast paths share.
package scan

// Space returns the index of the first byte at or after i in b that is not JSON
// whitespace (space, tab, line feed, carriage return), or len(b).
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

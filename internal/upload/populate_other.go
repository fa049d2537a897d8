//go:build unix && !linux

package upload

// populate: only Linux maps pages ahead (populate_linux.go).
const populate = 0

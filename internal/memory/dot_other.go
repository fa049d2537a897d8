//go:build !amd64

package memory

func dot(a, b []float32) float32 { return dotGeneric(a, b) }

package memory

import "golang.org/x/sys/cpu"

// useAVX2: the processor has AVX2 and FMA, for dotAVX2 (dot_amd64.s), some eight
// times as fast as dotGeneric: 10,000 vectors of 1,536 dimensions are 15 million
// multiplications a recall.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 is the dot product of the n float32s at a and at b.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

func dot(a, b []float32) float32 {
	if !useAVX2 || len(a) == 0 {
		return dotGeneric(a, b)
	}
	b = b[:len(a)]
	return dotAVX2(&a[0], &b[0], len(a))
}

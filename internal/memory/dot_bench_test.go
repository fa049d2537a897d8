package memory

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDotAgreesWithTheGenericSum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 31, 32, 33, 63, 100, 1536, 1537} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			want += float64(a[i]) * float64(b[i])
		}
		for name, got := range map[string]float32{"dot": dot(a, b), "dotGeneric": dotGeneric(a, b)} {
			if math.Abs(float64(got)-want) > 1e-3*math.Max(1, math.Abs(want)) {
				t.Errorf("%s of %d = %v, want %v", name, n, got, want)
			}
		}
	}
}

func BenchmarkDot1536(b *testing.B) {
	x, y := make([]float32, 1536), make([]float32, 1536)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	var s float32
	for b.Loop() {
		s += dot(x, y)
	}
	_ = s
}

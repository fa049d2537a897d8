package scan

import "testing"

func TestSpaceSkipsOnlyJSONWhitespace(t *testing.T) {
	for _, c := range []struct {
		in   string
		from int
		want int
	}{
		{"", 0, 0},
		{"x", 0, 0},
		{" \t\r\n{", 0, 4},
		{"a  b", 1, 3},
		{"\v{", 0, 0}, // not JSON whitespace
		{"   ", 0, 3},
		{"   ", 3, 3},
	} {
		if got := Space([]byte(c.in), c.from); got != c.want {
			t.Errorf("Space(%q, %d) = %d, want %d", c.in, c.from, got, c.want)
		}
	}
}

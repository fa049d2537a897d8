package cli

import "testing"

func TestValueArgIsJSONOrElseAString(t *testing.T) {
	for in, want := range map[string]string{
		`7`:               `7`,
		`true`:            `true`,
		`"quoted"`:        `"quoted"`,
		`["a","b"]`:       `["a","b"]`,
		`null`:            `null`,
		`gpt-4o`:          `"gpt-4o"`,
		`01`:              `"01"`,
		`[a,b]`:           `"[a,b]"`,
		`say "hi"`:        `"say \"hi\""`,
		``:                `""`,
		`{"k": 1}`:        `{"k": 1}`,
		`http://x/v1?a=b`: `"http://x/v1?a=b"`,
	} {
		if got := string(jsonArg(in)); got != want {
			t.Errorf("jsonArg(%q) = %s, want %s", in, got, want)
		}
	}
}

package memory

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// A word no memory holds is counted once until the next write, and a count that
// ran across a write keeps nothing: the write may have stored the word.
func TestTermCountsRememberZerosUntilAWrite(t *testing.T) {
	var c termCounts
	ctx, now := context.Background(), time.Now()
	var asked [][]string
	held := map[string]int{"kept": 3}
	count := func(_ context.Context, terms []string, _ int) (map[string]int, error) {
		asked = append(asked, slices.Clone(terms))
		out := map[string]int{}
		for _, t := range terms {
			if held[t] > 0 {
				out[t] = held[t]
			}
		}
		return out, nil
	}
	get := func() map[string]int {
		got, err := c.get(ctx, now, []string{"kept", "absent"}, 10, count)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := get(); got["kept"] != 3 || got["absent"] != 0 {
		t.Fatalf("counts %v", got)
	}
	get()
	if len(asked) != 1 {
		t.Fatalf("the second search counted again: %v", asked)
	}
	c.wrote()
	held["absent"] = 1
	c.wrote()
	if got := get(); got["absent"] != 1 {
		t.Fatalf("after a write that stored the word: %v (asked %v)", got, asked)
	}
	if want := []string{"absent"}; !slices.Equal(asked[len(asked)-1], want) {
		t.Fatalf("counted %v, want %v", asked[len(asked)-1], want)
	}

	// A count during which a write began keeps no zero.
	var racing termCounts
	racy := func(_ context.Context, terms []string, _ int) (map[string]int, error) {
		racing.wrote() // the write begins while the words are counted
		return map[string]int{}, nil
	}
	if _, err := racing.get(ctx, now, []string{"new"}, 10, racy); err != nil {
		t.Fatal(err)
	}
	if racing.zeros["new"] {
		t.Fatal("a zero counted across a write was kept")
	}
}

// The words of a long prompt are read up to the 32nd distinct one.
func TestQueryTermsStopAtTheirBound(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		b.WriteString("Word")
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString(", the ")
	}
	terms := queryTerms(b.String())
	if len(terms) != maxQueryTerms || terms[0] != "word" || terms[1] != "wordx" {
		t.Fatalf("%d terms: %v", len(terms), terms)
	}
	if got := queryTerms("Über  das: über; 42 THE"); !slices.Equal(got, []string{"über", "das", "42"}) {
		t.Fatalf("%v", got)
	}
}

func TestValidTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"project": true, "a.b:c/d-e_f": true, "über": true, "v2": true, strings.Repeat("é", 64): true,
		"": false, "has space": false, "a,b": false, strings.Repeat("x", 65): false, "bad\xff": false, "#x": false,
	} {
		if got := validTag(tag); got != want {
			t.Errorf("validTag(%q) = %v, want %v", tag, got, want)
		}
	}
}

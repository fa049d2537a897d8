package config

import (
	"strings"
	"testing"
)

func TestMemoryDefaultsAndValidation(t *testing.T) {
	c := Default()
	if !c.Memory.IsEnabled() || c.Memory.Limit() != 5 || c.Memory.Threshold() != 0.2 || c.Memory.HalfLife() != 7 || c.Memory.Model() != DefaultEmbeddingsModel {
		t.Fatalf("defaults: %+v", c.Memory)
	}
	for _, tc := range []struct{ prop, value, key string }{
		{"memory.embeddings_provider", `"nope"`, "memory.embeddings_provider"},
		{"memory.embeddings_provider", `"echo"`, "memory.embeddings_provider"},
		{"memory.min_score", `1.5`, "memory.min_score"},
		{"memory.recall_limit", `1000`, "memory.recall_limit"},
		{"memory.half_life_days", `-1`, "memory.half_life_days"},
	} {
		c := Default().Clone()
		if err := c.Set(tc.prop, []byte(tc.value)); err != nil {
			t.Fatalf("Set %s: %v", tc.prop, err)
		}
		err := c.Validate()
		if ve, ok := err.(*ValidationError); !ok || ve.Key != tc.key {
			t.Errorf("%s = %s: %v, want an error on %s", tc.prop, tc.value, err, tc.key)
		}
	}
	c = Default().Clone()
	for prop, value := range map[string]string{"memory.min_score": `"0.35"`, "memory.enabled": `false`} {
		if err := c.Set(prop, []byte(value)); err != nil {
			t.Fatalf("Set %s: %v", prop, err)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get("memory.min_score"); err != nil || string(got) != "0.35" {
		t.Fatalf("Get memory.min_score = %s, %v", got, err)
	}
	if c.Memory.IsEnabled() || !strings.Contains(c.String(), `"min_score":0.35`) {
		t.Fatalf("config: %s", c.String())
	}
}

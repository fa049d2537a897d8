package tool

import (
	"encoding/json/v2"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinToolsDescribeThemselves(t *testing.T) {
	mutates := map[string]bool{NameShell: true, NameWriteFile: true, NameEditFile: true}
	all := Builtin()
	if len(all) != len(Names()) {
		t.Fatalf("Builtin has %d tools, Names %d", len(all), len(Names()))
	}
	for _, name := range Names() {
		tool, ok := all[name]
		if !ok {
			t.Fatalf("Builtin lacks %q", name)
		}
		spec := tool.Spec()
		if spec.Name != name || spec.Description == "" {
			t.Errorf("%s: spec name %q, description %q", name, spec.Name, spec.Description)
		}
		if tool.Mutates() != mutates[name] {
			t.Errorf("%s: Mutates() = %v", name, tool.Mutates())
		}
		var schema struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		if err := json.Unmarshal(spec.Parameters, &schema, json.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("%s: schema: %v", name, err)
		}
		if schema.Type != "object" || len(schema.Properties) == 0 {
			t.Errorf("%s: schema type %q with %d properties", name, schema.Type, len(schema.Properties))
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", name, r)
			}
		}
		for p, s := range schema.Properties {
			if s["type"] == nil || s["description"] == nil {
				t.Errorf("%s: property %q lacks a type or a description", name, p)
			}
		}
	}
}

func TestSelect(t *testing.T) {
	names := func(tools []Tool) []string {
		var out []string
		for _, t := range tools {
			out = append(out, t.Spec().Name)
		}
		return out
	}
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "nil is every tool", in: nil, want: Names()},
		{name: "empty is every tool", in: []string{}, want: Names()},
		{name: "a subset, in the given order", in: []string{"read_file", "shell"}, want: []string{"read_file", "shell"}},
		{name: "unknown", in: []string{"read_file", "browser"}, wantErr: `unknown tool "browser"`},
		{name: "names are exact", in: []string{"Shell"}, wantErr: `unknown tool "Shell"`},
		{name: "twice", in: []string{"shell", "shell"}, wantErr: `tool "shell" is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Select(%q) error %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(names(got), tt.want) {
				t.Fatalf("Select(%q) = %q, %v; want %q", tt.in, names(got), err, tt.want)
			}
		})
	}
}

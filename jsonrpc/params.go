package jsonrpc

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/scan"
)

// DecodeParams unmarshals request params into v, a pointer to a struct, and answers
// -32602 when they do not fit. Absent params count as {}; array params are refused.
//
// Member names match the struct's json names exactly, plus one alternative spelling
// each (docs/protocol.md, "Methods"): snake_case for a camelCase name and camelCase
// for a snake_case one, so that clients written for either convention work unchanged.
// Giving both spellings of one param with different values is an error; unknown
// members are ignored.
func DecodeParams(params jsontext.Value, v any) error {
	if len(params) == 0 {
		params = jsontext.Value("{}")
	}
	if params.Kind() != '{' {
		return NewError(CodeInvalidParams, "invalid params: expected an object", map[string]any{"reason": "not_an_object"})
	}
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("jsonrpc.DecodeParams: %T is not a pointer to a struct", v)
	}
	canon, err := canonicalize(params, aliasesOf(t.Elem()))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(canon, v); err != nil {
		return paramsError(err)
	}
	return nil
}

func paramsError(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" {
		name := strings.TrimPrefix(string(se.JSONPointer), "/")
		msg := fmt.Sprintf("invalid params: %q", name)
		if se.JSONKind != 0 && se.GoType != nil {
			msg += fmt.Sprintf(": cannot use a JSON %s as %s", se.JSONKind, goTypeName(se.GoType))
		} else if se.Err != nil {
			msg += ": " + se.Err.Error()
		}
		return NewError(CodeInvalidParams, msg, map[string]any{"param": name})
	}
	return NewError(CodeInvalidParams, "invalid params: "+strings.TrimPrefix(err.Error(), "json: "), nil)
}

func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// canonicalize rewrites alternative spellings to the struct's names. It returns
// params unchanged (no copy) when no alternative spelling occurs.
func canonicalize(params jsontext.Value, aliases map[string]string) (jsontext.Value, error) {
	type member struct {
		name  string
		value jsontext.Value
	}
	if len(aliases) == 0 || !hasAlias(params, aliases) {
		return params, nil // Unmarshal validates it all
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(params))
	if _, err := d.ReadToken(); err != nil {
		return nil, paramsError(err)
	}
	var members []member
	renamed := false
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, paramsError(err)
		}
		name := tok.String() // before ReadValue, which voids tok
		val, err := d.ReadValue()
		if err != nil {
			return nil, paramsError(err)
		}
		end := int(d.InputOffset())
		val = params[end-len(val) : end : end] // the params' own bytes: no copy
		if c, ok := aliases[name]; ok {
			name, renamed = c, true
		}
		members = append(members, member{name, val})
	}
	if !renamed {
		return params, nil
	}
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	enc.WriteToken(jsontext.BeginObject)
	seen := make(map[string]jsontext.Value, len(members))
	for _, m := range members {
		if prev, dup := seen[m.name]; dup {
			if !sameJSON(prev, m.value) {
				return nil, NewError(CodeInvalidParams,
					fmt.Sprintf("invalid params: %q and %q are the same param with different values", m.name, alternative(m.name)),
					map[string]any{"param": m.name, "reason": "conflicting_spellings"})
			}
			continue
		}
		seen[m.name] = m.value
		enc.WriteToken(jsontext.String(m.name))
		enc.WriteValue(m.value)
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, paramsError(err)
	}
	return jsontext.Value(out.Bytes()), nil
}

// hasAlias reports whether an alternative spelling may occur among the top-level
// member names of params. It only skims: values are skipped by their brackets and
// strings with one bytes.IndexByte per quote, so a long string (a base64 chunk)
// costs about a memchr. Whatever it cannot read for sure (an escaped name, a
// malformed object) answers true, and the decoder looks. It need not validate:
// Unmarshal does, after.
func hasAlias(params []byte, aliases map[string]string) bool {
	i := scan.Space(params, 0)
	if i >= len(params) || params[i] != '{' {
		return true
	}
	i = scan.Space(params, i+1)
	if i < len(params) && params[i] == '}' {
		return false
	}
	for {
		if i >= len(params) || params[i] != '"' {
			return true
		}
		end := stringEnd(params, i+1)
		if end < 0 {
			return true
		}
		name := params[i+1 : end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return true
		}
		if _, ok := aliases[string(name)]; ok {
			return true
		}
		i = scan.Space(params, end+1)
		if i >= len(params) || params[i] != ':' {
			return true
		}
		if i = skim(params, scan.Space(params, i+1)); i < 0 {
			return true
		}
		i = scan.Space(params, i)
		if i >= len(params) {
			return true
		}
		switch params[i] {
		case ',':
			i = scan.Space(params, i+1)
		case '}':
			return false
		default:
			return true
		}
	}
}

// StringMember returns the JSON string that is the value of the top-level member
// name of params, as params spells it (quotes and escapes included), and true; or
// false when params is not an object with such a member whose value is a string.
// A caller that decoded the same params keeps the text it got as it came, so that
// putting it back into JSON is a copy, not an encoding (a session/prompt's 40 KB
// prompt was encoded twice more). Like hasAlias it only skims, trusting params to be
// valid: call it on params DecodeParams accepted. A name spelled with an escape is
// not found.
func StringMember(params jsontext.Value, name string) (jsontext.Value, bool) {
	i := scan.Space(params, 0)
	if i >= len(params) || params[i] != '{' {
		return nil, false
	}
	i = scan.Space(params, i+1)
	for i < len(params) && params[i] == '"' {
		end := stringEnd(params, i+1)
		if end < 0 {
			return nil, false
		}
		key := params[i+1 : end]
		if i = scan.Space(params, end+1); i >= len(params) || params[i] != ':' {
			return nil, false
		}
		start := scan.Space(params, i+1)
		if i = skim(params, start); i < 0 {
			return nil, false
		}
		if string(key) == name {
			if params[start] != '"' {
				return nil, false
			}
			return params[start:i:i], true
		}
		if i = scan.Space(params, i); i >= len(params) || params[i] != ',' {
			return nil, false
		}
		i = scan.Space(params, i+1)
	}
	return nil, false
}

// skim returns the index just past the JSON value at i, or -1, trusting the value
// to be valid.
func skim(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		if e := stringEnd(b, i+1); e >= 0 {
			return e + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = stringEnd(b, j+1); j < 0 {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	return j
}

// stringEnd returns the index of the quote that ends the string whose contents start
// at from, or -1.
func stringEnd(b []byte, from int) int {
	for {
		q := bytes.IndexByte(b[from:], '"')
		if q < 0 {
			return -1
		}
		q += from
		n := 0 // backslashes right before the quote
		for k := q - 1; k >= from && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}

func sameJSON(a, b jsontext.Value) bool {
	a, b = a.Clone(), b.Clone()
	if a.Canonicalize() != nil || b.Canonicalize() != nil {
		return false
	}
	return bytes.Equal(a, b)
}

var aliasCache sync.Map // reflect.Type -> map[string]string: immutable per type

// aliasesOf maps each field's alternative spelling to its json name.
func aliasesOf(t reflect.Type) map[string]string {
	if m, ok := aliasCache.Load(t); ok {
		return m.(map[string]string)
	}
	m := make(map[string]string)
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if alt := alternative(name); alt != name {
			m[alt] = name
		}
	}
	aliasCache.Store(t, m)
	return m
}

// alternative returns the other spelling of a param name: agentAlias <-> agent_alias.
func alternative(name string) string {
	if strings.Contains(name, "_") {
		var b strings.Builder
		up := false
		for _, r := range name {
			switch {
			case r == '_':
				up = true
			case up:
				b.WriteRune(unicode.ToUpper(r))
				up = false
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

package config

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Property paths (docs/protocol.md, "Configuration"): the toml names joined by dots,
// with map keys inline: "rpc.max_local_connections", "agents.default.model",
// "users.example.uid". A leaf property is a string, an integer, a boolean or a list
// of strings; a path may also name a table ("agents.default") to read it whole.

// Masked stands in for a secret on every read path.
const Masked = "***"

// Reasons a property path or value is refused (PropError.Reason).
const (
	ReasonUnknownProperty = "unknown_property"
	ReasonInvalidValue    = "invalid_value"
	ReasonNotSettable     = "not_settable"
)

// PropError is a property path or value that cannot be used. Its message never
// repeats the value: it may be a secret.
type PropError struct {
	Prop   string
	Reason string
	Msg    string
}

func (e *PropError) Error() string { return e.Msg }

func unknownProperty(prop string) *PropError {
	return &PropError{Prop: prop, Reason: ReasonUnknownProperty, Msg: "unknown property: " + prop}
}

// field is what a struct field's tags say about it.
type field struct {
	index     int
	name      string
	omitempty bool
	secret    bool
}

var fieldCache sync.Map // reflect.Type -> []field; immutable per type

func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		fs = append(fs, field{index: i, name: name, omitempty: opts == "omitempty", secret: sf.Tag.Get("secret") == "true"})
	}
	fieldCache.Store(t, fs)
	return fs
}

func fieldNamed(t reflect.Type, name string) (field, bool) {
	for _, f := range fieldsOf(t) {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func split(prop string) ([]string, bool) {
	segs := strings.Split(prop, ".")
	for _, s := range segs {
		if s == "" {
			return nil, false
		}
	}
	return segs, true
}

// typeAt walks prop over the Config type. It returns the type found and the field
// it was reached through (zero for a map element).
func typeAt(prop string) (reflect.Type, field, bool) {
	segs, ok := split(prop)
	if !ok {
		return nil, field{}, false
	}
	t := reflect.TypeFor[Config]()
	var f field
	for _, seg := range segs {
		switch t.Kind() {
		case reflect.Struct:
			if f, ok = fieldNamed(t, seg); !ok {
				return nil, field{}, false
			}
			t = t.Field(f.index).Type
		case reflect.Map:
			if !namePattern.MatchString(seg) {
				return nil, field{}, false
			}
			t, f = t.Elem(), field{}
		default:
			return nil, field{}, false
		}
	}
	return t, f, true
}

func isLeaf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Bool, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	case reflect.Pointer:
		switch e := t.Elem(); e.Kind() {
		case reflect.Int, reflect.Bool, reflect.Float64:
			return true
		case reflect.Slice:
			return e.Elem().Kind() == reflect.String
		}
	}
	return false
}

// CheckWritePath checks one config_write_paths entry: "*", "p.*" where p names a
// table or map (existing or not: "users.*", "users.example.*"), or a bare leaf
// property ("agents.default.model").
func CheckWritePath(p string) error {
	if p == "*" {
		return nil
	}
	if prefix, ok := strings.CutSuffix(p, ".*"); ok {
		t, _, ok := typeAt(prefix)
		switch {
		case !ok:
			return fmt.Errorf("no property or table %s", prefix)
		case isLeaf(t):
			return fmt.Errorf("%s is a single property: write it without .*", prefix)
		}
		return nil
	}
	t, _, ok := typeAt(p)
	switch {
	case !ok:
		return fmt.Errorf("no property %s", p)
	case !isLeaf(t):
		return fmt.Errorf("%s is a table: write %s.* to cover everything under it", p, p)
	}
	return nil
}

// Get returns the value at prop as JSON, secrets masked: a leaf's value, a table as
// an object, or null for a valid property that is unset (an optional field left
// empty, or a map key that does not exist). An unknown path is a *PropError.
func (c Config) Get(prop string) (jsontext.Value, error) {
	if _, _, ok := typeAt(prop); !ok {
		return nil, unknownProperty(prop)
	}
	segs, _ := split(prop)
	v := reflect.ValueOf(c)
	var f field
	for _, seg := range segs {
		switch v.Kind() {
		case reflect.Struct:
			f, _ = fieldNamed(v.Type(), seg)
			v = v.Field(f.index)
		case reflect.Map:
			e := v.MapIndex(reflect.ValueOf(seg))
			if !e.IsValid() {
				return jsontext.Value("null"), nil
			}
			v, f = e, field{secret: f.secret} // a secret map's values are secrets
		}
	}
	if f.omitempty && empty(v) {
		return jsontext.Value("null"), nil
	}
	return encodeMasked(v, f.secret), nil
}

// MaskedJSON returns the whole configuration as one JSON object, secrets masked and
// unset optional fields left out.
func (c Config) MaskedJSON() jsontext.Value { return encodeMasked(reflect.ValueOf(c), false) }

// String is the masked JSON, so that printing a Config never shows a secret.
func (c Config) String() string { return string(c.MaskedJSON()) }

// LogValue masks secrets in log lines.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// String is the masked JSON, so that printing a Provider never shows its key.
func (p Provider) String() string { return string(encodeMasked(reflect.ValueOf(p), false)) }

// LogValue masks the key in log lines.
func (p Provider) LogValue() slog.Value { return slog.StringValue(p.String()) }

// empty is what omitempty leaves out, as the TOML encoder sees it: a zero value, or
// an empty list.
func empty(v reflect.Value) bool {
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Map {
		return v.Len() == 0
	}
	return v.IsZero()
}

func encodeMasked(v reflect.Value, secret bool) jsontext.Value {
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	writeMasked(enc, v, secret)
	return jsontext.Value(bytes.TrimSpace(buf.Bytes()))
}

// writeMasked writes v: struct fields in declaration order under their toml names,
// map keys sorted, secrets as Masked. The types are this package's own, so the
// encoder cannot fail.
func writeMasked(enc *jsontext.Encoder, v reflect.Value, secret bool) {
	if secret && v.Kind() == reflect.Map {
		writeMap(enc, v, true) // the names show (env variables, headers), the values do not
		return
	}
	if secret && !v.IsZero() {
		enc.WriteToken(jsontext.String(Masked))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		enc.WriteToken(jsontext.BeginObject)
		for _, f := range fieldsOf(v.Type()) {
			fv := v.Field(f.index)
			if f.omitempty && empty(fv) {
				continue
			}
			enc.WriteToken(jsontext.String(f.name))
			writeMasked(enc, fv, f.secret)
		}
		enc.WriteToken(jsontext.EndObject)
	case reflect.Map:
		writeMap(enc, v, false)
	case reflect.Slice:
		enc.WriteToken(jsontext.BeginArray)
		for i := range v.Len() {
			writeMasked(enc, v.Index(i), false)
		}
		enc.WriteToken(jsontext.EndArray)
	case reflect.Pointer:
		if v.IsNil() {
			enc.WriteToken(jsontext.Null)
			return
		}
		writeMasked(enc, v.Elem(), secret)
	case reflect.String:
		enc.WriteToken(jsontext.String(v.String()))
	case reflect.Int:
		enc.WriteToken(jsontext.Int(v.Int()))
	case reflect.Float64:
		enc.WriteToken(jsontext.Float(v.Float()))
	case reflect.Bool:
		enc.WriteToken(jsontext.Bool(v.Bool()))
	default:
		panic(fmt.Sprintf("config: no JSON form for %s", v.Type()))
	}
}

// writeMap writes a map with its keys sorted; secret masks every value.
func writeMap(enc *jsontext.Encoder, v reflect.Value, secret bool) {
	enc.WriteToken(jsontext.BeginObject)
	keys := v.MapKeys()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	slices.Sort(names)
	for _, k := range names {
		enc.WriteToken(jsontext.String(k))
		writeMasked(enc, v.MapIndex(reflect.ValueOf(k)), secret)
	}
	enc.WriteToken(jsontext.EndObject)
}

// Set stores value (JSON) at the leaf property prop, creating a missing map entry
// with zero values (validation then decides whether the result is acceptable).
// The value must be JSON of the property's type; a string is accepted for an integer
// or a boolean only where it parses as one, and a list takes an array of strings.
// Set changes c in place: stage on a Clone. Errors are *PropError.
func (c *Config) Set(prop string, value jsontext.Value) error {
	t, _, ok := typeAt(prop)
	if !ok {
		return unknownProperty(prop)
	}
	if !isLeaf(t) {
		return &PropError{Prop: prop, Reason: ReasonNotSettable,
			Msg: prop + " is a table, not a property: set the properties under it one by one"}
	}
	value = bytes.TrimSpace(value)
	if !value.IsValid() {
		return &PropError{Prop: prop, Reason: ReasonInvalidValue, Msg: "invalid value for " + prop + ": not JSON"}
	}
	segs, _ := split(prop)
	return setAt(reflect.ValueOf(c).Elem(), segs, value, prop)
}

func setAt(v reflect.Value, segs []string, value jsontext.Value, prop string) error {
	if len(segs) == 0 {
		return assign(v, value, prop)
	}
	switch v.Kind() {
	case reflect.Struct:
		sf, _ := fieldNamed(v.Type(), segs[0])
		return setAt(v.Field(sf.index), segs[1:], value, prop)
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		key := reflect.ValueOf(segs[0])
		elem := reflect.New(v.Type().Elem()).Elem()
		if old := v.MapIndex(key); old.IsValid() {
			elem.Set(old)
		}
		if err := setAt(elem, segs[1:], value, prop); err != nil {
			return err
		}
		v.SetMapIndex(key, elem)
		return nil
	}
	return unknownProperty(prop)
}

func assign(v reflect.Value, value jsontext.Value, prop string) error {
	want := func(what string) error {
		return &PropError{Prop: prop, Reason: ReasonInvalidValue, Msg: "invalid value for " + prop + ": want " + what}
	}
	switch v.Kind() {
	case reflect.String:
		if value.Kind() != '"' {
			return want("a string")
		}
		var s string
		if err := json.Unmarshal(value, &s); err != nil {
			return want("a string")
		}
		v.SetString(s)
	case reflect.Pointer: // an optional value: set means present
		p := reflect.New(v.Type().Elem())
		if err := assign(p.Elem(), value, prop); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Int:
		n, ok := parseInt(value)
		if !ok {
			return want("an integer (a JSON number, or a string holding one)")
		}
		v.SetInt(n)
	case reflect.Float64:
		f, ok := parseFloat(value)
		if !ok {
			return want("a number (a JSON number, or a string holding one)")
		}
		v.SetFloat(f)
	case reflect.Bool:
		switch {
		case value.Kind() == 't' || value.Kind() == 'f':
			v.SetBool(value.Kind() == 't')
		case string(value) == `"true"` || string(value) == `"false"`:
			v.SetBool(string(value) == `"true"`)
		default:
			return want(`true or false (or the string "true" or "false")`)
		}
	case reflect.Slice:
		var items []jsontext.Value
		if value.Kind() != '[' || json.Unmarshal(value, &items) != nil {
			return want("an array of strings")
		}
		list := make([]string, len(items))
		for i, item := range items {
			if item.Kind() != '"' || json.Unmarshal(item, &list[i]) != nil {
				return want("an array of strings")
			}
		}
		v.Set(reflect.ValueOf(list))
	default:
		return unknownProperty(prop)
	}
	return nil
}

// parseInt accepts a JSON number with an integral value, or a JSON string holding a
// base-10 integer.
func parseInt(value jsontext.Value) (int64, bool) {
	switch value.Kind() {
	case '0':
		if n, err := strconv.ParseInt(string(value), 10, 64); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(string(value), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case '"':
		var s string
		if json.Unmarshal(value, &s) != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Clone returns a deep copy of c: changing the copy never touches c.
func (c Config) Clone() Config { return deepCopy(reflect.ValueOf(c)).Interface().(Config) }

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			out.Field(i).Set(deepCopy(v.Field(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	}
	return v
}

// parseFloat reads a finite JSON number, or a string holding one.
func parseFloat(value jsontext.Value) (float64, bool) {
	s := string(value)
	if value.Kind() == '"' {
		if json.Unmarshal(value, &s) != nil {
			return 0, false
		}
	} else if value.Kind() != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

package tool

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// decodeArgs decodes a call's JSON object arguments into v. encoding/json/v2 matches
// member names exactly (so "Path" is not "path"), rejects duplicate names and
// invalid UTF-8, and fails on a wrong type; unknown members are ignored, because
// models add stray ones and they carry no meaning. Missing arguments ("" or none
// given) count as an empty object, so that the required-argument checks speak.
func decodeArgs(args jsontext.Value, v any) error {
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// failure is a Result that reports an error to the model.
func failure(format string, a ...any) Result {
	return Result{Output: fmt.Sprintf(format, a...), IsError: true}
}

// errText describes a file system error without repeating the path that the message
// around it already names.
func errText(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// validText returns b as a string that is valid UTF-8 (which the JSON on the wire
// requires), with each invalid byte sequence replaced by U+FFFD, and whether it had to
// replace anything. An incomplete sequence at the very end is cut instead when
// cutTail is set, because a cap can split a character there.
func validText(b []byte, cutTail bool) (string, bool) {
	if cutTail {
		b = trimPartialRune(b)
	}
	if utf8.Valid(b) {
		return string(b), false
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, if any.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing pending
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

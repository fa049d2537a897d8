package upload

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	return r.Reason
}

func b64(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }

func TestDecodeRefusesBadBase64AndOversizeData(t *testing.T) {
	if b, err := Decode(b64([]byte("hello")), 5); err != nil || string(b) != "hello" {
		t.Fatalf("Decode = %q, %v", b, err)
	}
	if b, err := Decode([]byte(base64.RawStdEncoding.EncodeToString([]byte("hello"))), 5); err != nil || string(b) != "hello" {
		t.Fatalf("unpadded: %q, %v", b, err)
	}
	if r := reasonOf(t, func() error { _, err := Decode([]byte("@@@@"), 10); return err }()); r != ReasonBadBase64 {
		t.Errorf("bad base64: %s", r)
	}
	if r := reasonOf(t, func() error { _, err := Decode(b64([]byte("hello!")), 5); return err }()); r != ReasonTooLarge {
		t.Errorf("one byte over: %s", r)
	}
	// file/attach's limit: 10 MiB decoded, refused before decoding when longer.
	if r := reasonOf(t, func() error { _, err := Decode([]byte(strings.Repeat("A", 4*(MaxBytes/3+2))), MaxBytes); return err }()); r != ReasonTooLarge {
		t.Errorf("over 10 MiB: %s", r)
	}
}

func TestFilenamesAndMarkers(t *testing.T) {
	if err := CheckFilename(strings.Repeat("é", 128)); err == nil { // 256 bytes
		t.Error("a 256-byte filename must be refused")
	}
	if err := CheckFilename(strings.Repeat("x", 255)); err != nil {
		t.Error(err)
	}
	for name, want := range map[string]string{
		"a.PNG": "png", "x.tar.gz": "gz", "noext": "", "dot.": "", "a.b-c": "",
		"a." + strings.Repeat("x", 16): strings.Repeat("x", 16), "a." + strings.Repeat("x", 17): "",
	} {
		if got := extension(name); got != want {
			t.Errorf("extension(%q) = %q, want %q", name, got, want)
		}
	}
	for _, tt := range []struct{ filename, path, want string }{
		{"cat.jpg", "uploads/ab.jpg", "[IMAGE:uploads/ab.jpg]"},
		{"x", "uploads/ab.webp", "[IMAGE:uploads/ab.webp]"},
		{"notes.txt", "uploads/ab.txt", "[Document: notes.txt] uploads/ab.txt"},
		{"", "uploads/ab", "[Document: upload] uploads/ab"},
	} {
		if got := Marker(tt.filename, tt.path); got != tt.want {
			t.Errorf("Marker(%q, %q) = %q, want %q", tt.filename, tt.path, got, tt.want)
		}
	}
}

package tool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// ReadFile is the read_file tool: the text of one file in the workspace, whole or
// a range of its lines.
type ReadFile struct{}

func (ReadFile) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameReadFile,
		Description: "Read a text file in the workspace and return its content. " +
			"Paths are relative to the workspace; paths outside it are refused. " +
			"Give offset (the 1-based first line) and/or limit (how many lines) to read part of a long file. " +
			"At most 1 MiB is returned, with a note when there is more.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
    "offset": {"type": "integer", "minimum": 1, "description": "The first line to return, counting from 1. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to return at most. Default: to the end of the file (within the 1 MiB cap)."}
  },
  "required": ["path"]
}`),
	}
}

func (ReadFile) Mutates() bool { return false }

func (ReadFile) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Path   string `json:"path"`
		Offset *int   `json:"offset"`
		Limit  *int   `json:"limit"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	switch {
	case a.Path == "":
		return failure("invalid arguments: path is required")
	case a.Offset != nil && *a.Offset < 1:
		return failure("invalid arguments: offset is %d; lines count from 1", *a.Offset)
	case a.Limit != nil && *a.Limit < 1:
		return failure("invalid arguments: limit is %d; it must be at least 1", *a.Limit)
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	r, rel, err := openWorkspace(env.Workspace, a.Path)
	if err != nil {
		return failure("%v", err)
	}
	defer r.Close()

	// Check the kind first: opening a FIFO for reading would block until a writer
	// comes, and a device has no end.
	fi, err := r.Stat(rel)
	switch {
	case err != nil:
		return failure("cannot read %q: %s", a.Path, errText(err))
	case fi.IsDir():
		return failure("cannot read %q: it is a directory (list it with list_dir)", a.Path)
	case !fi.Mode().IsRegular():
		return failure("cannot read %q: not a regular file", a.Path)
	}
	f, err := r.Open(rel)
	if err != nil {
		return failure("cannot read %q: %s", a.Path, errText(err))
	}
	defer f.Close()
	if a.Offset != nil || a.Limit != nil {
		offset, limit := 1, 0
		if a.Offset != nil {
			offset = *a.Offset
		}
		if a.Limit != nil {
			limit = *a.Limit
		}
		return readLines(ctx, f, a.Path, offset, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return failure("cannot read %q: %s", a.Path, errText(err))
	}
	truncated := len(data) > MaxReadBytes
	if truncated {
		data = data[:MaxReadBytes]
	}
	text, replaced := validText(data, truncated)
	if replaced {
		text = withNote(text, invalidNote)
	}
	if truncated {
		size := max(fi.Size(), MaxReadBytes+1)
		text = withNote(text, fmt.Sprintf("[truncated: the file has %d bytes; only the first %d are shown]", size, MaxReadBytes))
	}
	return Result{Output: text, Truncated: truncated}
}

const invalidNote = "[the file is not valid UTF-8 text: invalid bytes are shown as U+FFFD]"

// readLines returns lines offset … offset+limit-1 of f (limit 0: to the end), as
// they are in the file, line breaks included, at most MaxReadBytes of them. A note
// tells where to go on when the file has more lines after them.
func readLines(ctx context.Context, f io.Reader, path string, offset, limit int) Result {
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; n < offset; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return failure("cancelled")
		}
		read, err := skipLine(br)
		if err != nil {
			return failure("cannot read %q: %s", path, errText(err))
		}
		if !read {
			return failure("offset %d is past the end of %q: it has %d lines", offset, path, n-1)
		}
	}
	var out []byte
	shown, truncated := 0, false
	for limit == 0 || shown < limit {
		if shown%4096 == 4095 && ctx.Err() != nil {
			return failure("cancelled")
		}
		line, err := readLine(br, MaxReadBytes-len(out)+1)
		if err != nil {
			return failure("cannot read %q: %s", path, errText(err))
		}
		if len(line) == 0 {
			break
		}
		if len(out)+len(line) > MaxReadBytes {
			out = append(out, line[:MaxReadBytes-len(out)]...)
			truncated = true
			break
		}
		out = append(out, line...)
		shown++
	}
	if shown == 0 && offset > 1 && !truncated {
		return failure("offset %d is past the end of %q: it has %d lines", offset, path, offset-1)
	}
	text, replaced := validText(out, truncated)
	if replaced {
		text = withNote(text, invalidNote)
	}
	switch {
	case truncated:
		text = withNote(text, fmt.Sprintf("[truncated: at most %d bytes are shown; line %d is cut]", MaxReadBytes, offset+shown))
	case more(br):
		text = withNote(text, fmt.Sprintf("[lines %d-%d shown; the file goes on: continue with offset %d]", offset, offset+shown-1, offset+shown))
	}
	return Result{Output: text, Truncated: truncated}
}

// skipLine reads past one line, however long; read is false at the end of input.
func skipLine(br *bufio.Reader) (read bool, err error) {
	for {
		b, err := br.ReadSlice('\n')
		read = read || len(b) > 0
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return read, nil
		default:
			return read, err
		}
	}
}

// readLine returns the next line with its line break, at most max bytes of it
// (the rest of a longer line stays unread); empty at the end of input.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for len(line) < max {
		b, err := br.ReadSlice('\n')
		line = append(line, b[:min(len(b), max-len(line))]...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, nil
		default:
			return line, err
		}
	}
	return line, nil
}

// more reports whether br has input left.
func more(br *bufio.Reader) bool {
	_, err := br.Peek(1)
	return err == nil
}

// withNote appends a note on a line of its own.
func withNote(text, note string) string {
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + note
}

// lineOf is the 1-based line of byte offset i in data.
func lineOf(data []byte, i int) int {
	return 1 + bytes.Count(data[:i], []byte("\n"))
}

package tool

import (
	"context"
	"encoding/json/jsontext"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// EditFile is the edit_file tool: replace an exact piece of text in one file of the
// workspace, once (the piece must be unique) or everywhere.
type EditFile struct{}

func (EditFile) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameEditFile,
		Description: "Edit a text file in the workspace by replacing old_text with new_text. " +
			"old_text must match the file exactly, whitespace and line breaks included, and must occur " +
			"exactly once unless replace_all is true (then every occurrence is replaced). " +
			"Include enough surrounding lines to make it unique. Paths are relative to the workspace; " +
			"paths outside it are refused. Create new files with write_file.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the file, relative to the workspace."},
    "old_text": {"type": "string", "description": "The exact text to replace; not empty."},
    "new_text": {"type": "string", "description": "The text to put in its place (may be empty, to delete)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_text instead of requiring exactly one. Default false."}
  },
  "required": ["path", "old_text", "new_text"]
}`),
	}
}

func (EditFile) Mutates() bool { return true }

// editArgs are edit_file's arguments.
type editArgs struct {
	Path       string  `json:"path"`
	OldText    *string `json:"old_text"`
	NewText    *string `json:"new_text"`
	ReplaceAll bool    `json:"replace_all"`
}

func (EditFile) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a editArgs
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	switch {
	case a.Path == "":
		return failure("invalid arguments: path is required")
	case a.OldText == nil:
		return failure("invalid arguments: old_text is required")
	case *a.OldText == "":
		return failure("invalid arguments: old_text is empty; to create or replace a whole file use write_file")
	case a.NewText == nil:
		return failure("invalid arguments: new_text is required")
	case *a.OldText == *a.NewText:
		return failure("old_text and new_text are the same: the edit would change nothing")
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	r, rel, err := openWorkspace(env.Workspace, a.Path)
	if err != nil {
		return failure("%v", err)
	}
	defer r.Close()
	if rel == "." {
		return failure("cannot edit %q: it is the workspace directory", a.Path)
	}
	content, perm, res := readForEdit(r, rel, a.Path)
	if res != nil {
		return *res
	}
	old, repl := *a.OldText, *a.NewText
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return failure("%s", notFound(content, old, a.Path))
	case n > 1 && !a.ReplaceAll:
		return failure("old_text occurs %d times in %q; it must occur exactly once: include more of the "+
			"surrounding text to make it unique, or set replace_all to replace all %d", n, a.Path, n)
	}
	first := strings.Index(content, old)
	var updated string
	if a.ReplaceAll {
		updated = strings.ReplaceAll(content, old, repl)
	} else {
		updated = content[:first] + repl + content[first+len(old):]
	}
	if len(updated) > MaxWriteBytes {
		return failure("the edited %q would be %d bytes; files are limited to %d", a.Path, len(updated), MaxWriteBytes)
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	if err := writeAtomic(r, rel, []byte(updated), perm); err != nil {
		return failure("cannot write %q: %s", a.Path, err)
	}
	out := fmt.Sprintf("edited %s: replaced 1 occurrence at line %d", a.Path, lineOf([]byte(content), first))
	if n > 1 {
		out = fmt.Sprintf("edited %s: replaced %d occurrences, the first at line %d", a.Path, n, lineOf([]byte(content), first))
	}
	return Result{Output: out, Diff: newDiff(absPath(env.Workspace, rel), &content, updated)}
}

// readForEdit reads the file an edit changes, with its permission bits (which the
// edited file keeps). On failure res is the call's result.
func readForEdit(r *os.Root, rel, path string) (content string, perm os.FileMode, res *Result) {
	fail := func(format string, a ...any) (string, os.FileMode, *Result) {
		f := failure(format, a...)
		return "", 0, &f
	}
	fi, err := r.Stat(rel)
	switch {
	case missing(err):
		return fail("cannot edit %q: it does not exist (create it with write_file)", path)
	case err != nil:
		return fail("cannot edit %q: %s", path, errText(err))
	case fi.IsDir():
		return fail("cannot edit %q: it is a directory", path)
	case !fi.Mode().IsRegular():
		return fail("cannot edit %q: not a regular file", path)
	case fi.Size() > MaxWriteBytes:
		return fail("cannot edit %q: it has %d bytes; edit_file handles files of at most %d", path, fi.Size(), MaxWriteBytes)
	}
	f, err := r.Open(rel)
	if err != nil {
		return fail("cannot edit %q: %s", path, errText(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
	switch {
	case err != nil:
		return fail("cannot edit %q: %s", path, errText(err))
	case len(data) > MaxWriteBytes:
		return fail("cannot edit %q: it has more than %d bytes; edit_file handles files of at most that", path, MaxWriteBytes)
	}
	return string(data), fi.Mode().Perm(), nil
}

// notFound says that old is not in content, with a hint when it is there but for
// line breaks or the whitespace around it.
func notFound(content, old, path string) string {
	msg := fmt.Sprintf("old_text was not found in %q; it must match the file exactly, whitespace and line breaks included "+
		"(read the file again to see its current text)", path)
	switch {
	case !strings.Contains(old, "\r\n") && strings.Contains(content, strings.ReplaceAll(old, "\n", "\r\n")):
		msg += ": the file has CRLF (\\r\\n) line breaks and old_text has \\n"
	case strings.TrimSpace(old) != old && strings.TrimSpace(old) != "" && strings.Contains(content, strings.TrimSpace(old)):
		msg += ": it is there without the whitespace old_text begins or ends with"
	}
	return msg
}

// Locations of edit_file: the file, at the line where old_text first occurs when
// it does (read before the call runs, so an approval shows where the edit goes).
func (EditFile) Locations(env Env, args jsontext.Value) []Location {
	var a editArgs
	if decodeArgs(args, &a) != nil || a.Path == "" {
		return []Location{}
	}
	locs := locate(env, a.Path, 0)
	if len(locs) == 0 || a.OldText == nil || *a.OldText == "" {
		return locs
	}
	r, rel, err := openWorkspace(env.Workspace, a.Path)
	if err != nil {
		return locs
	}
	defer r.Close()
	if content, _, res := readForEdit(r, rel, a.Path); res == nil {
		if i := strings.Index(content, *a.OldText); i >= 0 {
			locs[0].Line = lineOf([]byte(content), i)
		}
	}
	return locs
}

package tool

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// MaxGlobResults bounds the paths glob answers.
const MaxGlobResults = 1000

// Glob is the glob tool: the paths in the workspace that a doublestar pattern
// matches. It walks an os.Root's file system (io/fs) with
// github.com/bmatcuk/doublestar/v4, not following symbolic links, so a pattern can
// never reach out of the workspace.
type Glob struct{}

func (Glob) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameGlob,
		Description: "Find files in the workspace by a glob pattern, relative to the workspace: \"*\" and \"?\" " +
			"match within one name, \"**\" any number of directories (\"**/*.go\", \"src/**/test_*.py\"), " +
			"\"{a,b}\" either, \"[abc]\" one of. Answers the matching paths, sorted, one per line, directories " +
			"with a trailing \"/\"; the .git directory is left out unless the pattern names it, and symbolic " +
			"links are not followed. At most 1000 paths.",
		Parameters: jsontext.Value(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern, relative to the workspace, with \"/\" between names."}
  },
  "required": ["pattern"]
}`),
	}
}

func (Glob) Mutates() bool { return false }

var errTooMany = errors.New("too many matches")

func (Glob) Run(ctx context.Context, env Env, args jsontext.Value) Result {
	var a struct {
		Pattern string `json:"pattern"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return failure("%v", err)
	}
	pattern := strings.TrimPrefix(a.Pattern, "./")
	switch {
	case a.Pattern == "":
		return failure("invalid arguments: pattern is required")
	case strings.HasPrefix(pattern, "/") || filepath.IsAbs(pattern) || filepath.VolumeName(pattern) != "":
		return failure("invalid arguments: pattern %q is absolute; give it relative to the workspace", a.Pattern)
	case slices.Contains(strings.Split(pattern, "/"), ".."):
		return failure("invalid arguments: pattern %q has a \"..\": it must stay inside the workspace", a.Pattern)
	case !doublestar.ValidatePattern(pattern):
		return failure("invalid arguments: pattern %q is not a valid glob", a.Pattern)
	}
	if err := ctx.Err(); err != nil {
		return failure("cancelled")
	}
	r, _, err := openWorkspace(env.Workspace, ".")
	if err != nil {
		return failure("%v", err)
	}
	defer r.Close()
	wantGit := strings.Contains(pattern, ".git")
	var paths []string
	err = doublestar.GlobWalk(r.FS(), pattern, func(p string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !wantGit && slices.Contains(strings.Split(p, "/"), ".git") {
			if d.IsDir() {
				return doublestar.SkipDir
			}
			return nil
		}
		if len(paths) == MaxGlobResults {
			return errTooMany
		}
		name, _ := validText([]byte(p), false)
		if d.IsDir() {
			name += "/"
		}
		paths = append(paths, name)
		return nil
	}, doublestar.WithNoFollow())
	switch {
	case errors.Is(err, errTooMany):
	case ctx.Err() != nil:
		return failure("cancelled")
	case err != nil:
		return failure("glob %q failed: %s", a.Pattern, errText(err))
	}
	if len(paths) == 0 {
		return Result{Output: fmt.Sprintf("no paths match %q", a.Pattern)}
	}
	slices.Sort(paths)
	out := strings.Join(paths, "\n")
	cut := errors.Is(err, errTooMany)
	if cut {
		out = withNote(out, fmt.Sprintf("[truncated: more than %d paths match; narrow the pattern]", MaxGlobResults))
	}
	return Result{Output: out, Truncated: cut}
}

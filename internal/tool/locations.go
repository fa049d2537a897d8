package tool

import (
	"encoding/json/jsontext"
	"path/filepath"
)

// absPath is the absolute path of rel (as resolve returns it, relative to the
// symlink-evaluated workspace) under the workspace as the session names it, which
// is the path a client that gave that workspace knows the file by.
func absPath(workspace, rel string) string {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		ws = workspace
	}
	return filepath.Join(ws, rel)
}

// locate is the location of path p inside the workspace (with line, when > 0), or
// none when p is empty or leads out of it.
func locate(env Env, p string, line int) []Location {
	if p == "" {
		return []Location{}
	}
	_, rel, err := resolve(env.Workspace, p)
	if err != nil {
		return []Location{}
	}
	return []Location{{Path: absPath(env.Workspace, rel), Line: line}}
}

// pathArg is the "path" argument of a call ("" when the arguments do not decode),
// or dflt when it is absent.
func pathArg(args jsontext.Value, dflt string) string {
	var a struct {
		Path *string `json:"path"`
	}
	if decodeArgs(args, &a) != nil {
		return ""
	}
	if a.Path == nil || *a.Path == "" {
		return dflt
	}
	return *a.Path
}

func (ReadFile) Locations(env Env, args jsontext.Value) []Location {
	var a struct {
		Offset int `json:"offset"`
	}
	decodeArgs(args, &a) // a bad offset fails the call itself; the path still locates
	return locate(env, pathArg(args, ""), max(a.Offset, 0))
}

func (WriteFile) Locations(env Env, args jsontext.Value) []Location {
	return locate(env, pathArg(args, ""), 0)
}

func (ListDir) Locations(env Env, args jsontext.Value) []Location {
	return locate(env, pathArg(args, "."), 0)
}

func (Search) Locations(env Env, args jsontext.Value) []Location {
	return locate(env, pathArg(args, "."), 0)
}

func (Glob) Locations(env Env, args jsontext.Value) []Location {
	return locate(env, ".", 0)
}

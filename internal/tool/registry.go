package tool

import "fmt"

// The names of the built-in tools, as the model and the config see them.
const (
	NameShell     = "shell"
	NameReadFile  = "read_file"
	NameWriteFile = "write_file"
	NameListDir   = "list_dir"
	NameAskUser   = "ask_user"
	NameEditFile  = "edit_file"
	NameSearch    = "search"
	NameGlob      = "glob"
	// NameUpdatePlan publishes the model's plan (docs/protocol.md, "Tools").
	NameUpdatePlan = "update_plan"
)

// Names returns the names of the built-in tools in their canonical order, which is
// the order Select gives them to the model when an agent lists none.
func Names() []string {
	return []string{NameShell, NameReadFile, NameWriteFile, NameEditFile, NameListDir, NameSearch, NameGlob,
		NameAskUser, NameUpdatePlan}
}

// Builtin returns the built-in tools by name. The tools hold no state: one value
// serves every session.
func Builtin() map[string]Tool {
	return map[string]Tool{
		NameShell:      Shell{},
		NameReadFile:   ReadFile{},
		NameWriteFile:  WriteFile{},
		NameListDir:    ListDir{},
		NameAskUser:    AskUser{},
		NameEditFile:   EditFile{},
		NameSearch:     Search{},
		NameGlob:       Glob{},
		NameUpdatePlan: UpdatePlan{},
	}
}

// Select returns the tools an agent's `tools` list names, in its order; an empty
// list means every built-in tool, in the order of Names. An unknown or repeated name
// is an error naming it, since a provider would reject a tool given twice.
func Select(names []string) ([]Tool, error) {
	if len(names) == 0 {
		names = Names()
	}
	all := Builtin()
	tools := make([]Tool, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		t, ok := all[n]
		switch {
		case !ok:
			return nil, fmt.Errorf("unknown tool %q (known: %v)", n, Names())
		case seen[n]:
			return nil, fmt.Errorf("tool %q is listed twice", n)
		}
		seen[n] = true
		tools = append(tools, t)
	}
	return tools, nil
}

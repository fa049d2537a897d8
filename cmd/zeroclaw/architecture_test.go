package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestArchitectureNamesOnlyWhatExists keeps docs/ARCHITECTURE.md true: every package
// directory and Go file it names in backquotes exists in the repository, and every
// package of the module is named there.
func TestArchitectureNamesOnlyWhatExists(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	// `internal/x`, `internal/x/file.go`, `cmd/x`, `client`, `jsonrpc`, and the file
	// names a sentence gives beside them (`server.go`) are checked against the tree.
	for _, m := range regexp.MustCompile("`((?:internal|cmd)/[a-z0-9_/-]+(?:\\.go)?|client|jsonrpc|protocol)[`/ .]").FindAllStringSubmatch(string(doc), -1) {
		p := m[1]
		named[strings.TrimSuffix(p, "/")] = true
	}
	if len(named) < 10 {
		t.Fatalf("found only %d paths in docs/ARCHITECTURE.md", len(named))
	}
	for p := range named {
		if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
			t.Errorf("docs/ARCHITECTURE.md names %s, which does not exist", p)
		}
	}
	// Every package directory of the module appears in the doc.
	err = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel("../..", filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if rel != "." && !named[rel] && !strings.Contains(string(doc), "`"+rel+"`") {
			named[rel] = true // report once
			t.Errorf("package %s is not described in docs/ARCHITECTURE.md", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTheCoreKnowsNothingOfJSONRPC: below internal/rpc, internal/session and
// internal/upload depend on no wire package, and upload not on session.
func TestTheCoreKnowsNothingOfJSONRPC(t *testing.T) {
	const mod = "github.com/zeroclaw-labs/zeroclaw-go/"
	forbidden := map[string][]string{
		"internal/session": {"jsonrpc", "internal/rpc"},
		"internal/upload":  {"jsonrpc", "internal/rpc", "internal/session"},
		// The model vocabulary is internal/llm's: the store, the tools and the MCP
		// servers take it from there, never from the provider adapters.
		"internal/store": {"internal/provider", "internal/session", "internal/feed", "internal/tool"},
		"internal/llm":   {"internal/provider", "internal/store"},
		"internal/tool":  {"internal/provider", "internal/session"},
		"internal/mcp":   {"internal/provider", "internal/session"},
		// Memory sits on the store: it takes the vocabulary from internal/llm and
		// knows nothing of sessions or the wire (session and rpc call it).
		"internal/memory": {"internal/provider", "internal/session", "internal/rpc", "jsonrpc"},
		// The wire types are a leaf both sides share; JSON-RPC knows none of them.
		"protocol": {"jsonrpc", "client", "internal/session", "internal/rpc", "internal/feed"},
		"jsonrpc":  {"protocol", "internal/session", "internal/rpc"},
		// The update stream knows nothing of sessions, turns or the wire.
		"internal/feed": {"internal/session", "internal/agent", "internal/provider", "jsonrpc", "internal/rpc"},
	}
	for pkg, banned := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, line := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(line, mod)] = true
		}
		for _, b := range banned {
			if deps[b] {
				t.Errorf("%s depends on %s", pkg, b)
			}
		}
	}
}

// TestTheDaemonBinaryLinksNoTerminalUI: the full-screen client's libraries (Bubble
// Tea, Glamour and its highlighter, HTML sanitizer, markdown parser) are linked into
// zeroclaw-tui only; in zeroclaw their package initialisation alone cost the daemon
// two thirds of its start-up and half of its memory at rest.
func TestTheDaemonBinaryLinksNoTerminalUI(t *testing.T) {
	banned := []string{"charm.land/", "github.com/alecthomas/chroma", "github.com/yuin/goldmark",
		"github.com/microcosm-cc/bluemonday", "github.com/zeroclaw-labs/zeroclaw-go/internal/tui"}
	linked := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		var found []string
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					found = append(found, dep)
				}
			}
		}
		return found
	}
	if found := linked("."); len(found) > 0 {
		t.Errorf("zeroclaw links the terminal UI's packages: %s", strings.Join(found, " "))
	}
	if found := linked("../zeroclaw-tui"); len(found) < 5 {
		t.Errorf("zeroclaw-tui links only %v of the terminal UI's packages", found)
	}
}

// TestNoProductionCodeImportsATestDouble: the test doubles (scripted model
// servers, the full filesystem) live under internal/testing, and only tests
// import them; nothing outside that tree but a test imports package testing.
func TestNoProductionCodeImportsATestDouble(t *testing.T) {
	const doubles = "github.com/zeroclaw-labs/zeroclaw-go/internal/testing/"
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../../"))
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, "internal/testing/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, doubles) || p == "testing" {
				t.Errorf("%s imports %s: test doubles and package testing are for tests only", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d production files", checked)
	}
}

// TestEachHelperIsWrittenOnce: the tests' poll (wait.For, wait.PIDFile) and the
// JSON fast paths' whitespace scan (scan.Space) each have one home; a function of
// one of the names their copies had is a new copy.
func TestEachHelperIsWrittenOnce(t *testing.T) {
	copies := map[string]string{
		"waitFor": "wait.For", "waitForPid": "wait.PIDFile", "waitForPID": "wait.PIDFile",
		"skipSpace": "scan.Space",
	}
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && copies[fn.Name.Name] != "" {
				t.Errorf("%s declares %s: use %s", strings.TrimPrefix(path, "../../"), fn.Name.Name, copies[fn.Name.Name])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 200 {
		t.Fatalf("checked only %d files", checked)
	}
}

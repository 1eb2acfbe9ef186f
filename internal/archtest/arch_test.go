package archtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// module is the module path; packages are named relative to it below.
const module = "github.com/reverie-ai/reverie"

// thirdPartyFor lists the only third-party modules a vocabulary package may
// import (chat and llm: none).
var thirdPartyFor = map[string][]string{
	"tool":      {"github.com/google/jsonschema-go"},
	"extension": {},
	"chat":      {},
	"llm":       {},
	"api":       {},
}

// moduleImportsFor lists the module packages a vocabulary package may import.
var moduleImportsFor = map[string][]string{
	"chat": {},
	"llm":  {},
	// evidence is the packet tool results and recall reach the prompt in.
	"evidence":  {},
	"tool":      {"chat", "llm"},
	"extension": {"chat", "llm", "tool"},
	// api is the HTTP API's contract (JSON types and service interfaces)
	// that extensions/web serves and the app implements.
	"api": {"chat", "evidence", "llm", "tool", "extension"},
}

// internalAllowedForExtensions lists, per extension package, the internal
// packages it may import. Extensions are meant to need only the public API
// (extension.Host and the vocabulary packages), so it starts empty; every
// entry added here must say why. internal/app is never allowed: it is the
// composition root and sees the extensions, not the other way round.
var internalAllowedForExtensions = map[string][]string{}

// compositionRoots may import extensions.
var compositionRoots = []string{"internal/app", "internal/apptest"}

// listedPackage is the part of `go list -json` this test reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	Name       string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Error      *struct{ Err string }
}

func TestPackagesHaveDocComments(t *testing.T) {
	pkgs := listPackages(t)
	var missing []string
	for _, p := range pkgs {
		files := append(slices.Clone(p.GoFiles), p.CgoFiles...)
		if len(files) == 0 {
			continue // test-only package
		}
		ok, err := hasPackageDoc(p.Dir, files)
		if err != nil {
			t.Errorf("%s: %v", p.ImportPath, err)
			continue
		}
		if !ok {
			missing = append(missing, p.ImportPath)
		}
	}
	if len(missing) > 0 {
		t.Errorf("packages without a package doc comment (// Package x ... in one non-test file):\n\t%s",
			strings.Join(missing, "\n\t"))
	}
}

func TestImportDirection(t *testing.T) {
	pkgs := listPackages(t)
	var all []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		seen[rel] = true
		all = append(all, violations(rel, p.Imports)...)
	}
	for rel := range moduleImportsFor {
		if !seen[rel] {
			t.Errorf("go list did not report %s: the walk is broken", rel)
		}
	}
	if len(all) > 0 {
		t.Errorf("import rule violations (package → import: rule):\n\t%s", strings.Join(all, "\n\t"))
	}
}

// TestRules checks the rules themselves on hand-written cases, so that a
// rule that can never fire is noticed.
func TestRules(t *testing.T) {
	tests := []struct {
		name    string
		pkg     string
		imports []string
		want    []string // imports reported, in order
	}{
		{"chat stdlib only", "chat", []string{"fmt", "time"}, nil},
		{"chat importing llm", "chat", []string{"fmt", module + "/llm"}, []string{module + "/llm"}},
		{"llm importing third party", "llm", []string{"github.com/google/uuid"}, []string{"github.com/google/uuid"}},
		{"tool with jsonschema", "tool", []string{"github.com/google/jsonschema-go/jsonschema", module + "/llm"}, nil},
		{"tool with another module", "tool", []string{"github.com/invopop/jsonschema", module + "/extension"},
			[]string{"github.com/invopop/jsonschema", module + "/extension"}},
		{"extension with vocabulary", "extension", []string{module + "/chat", module + "/tool", "log/slog"}, nil},
		{"extension with third party", "extension", []string{"github.com/goccy/go-yaml"}, []string{"github.com/goccy/go-yaml"}},
		{"extension with internal", "extension", []string{module + "/internal/sqlite"}, []string{module + "/internal/sqlite"}},
		{"extensiontest public and third party", "extension/extensiontest",
			[]string{module + "/extension", module + "/chat", "github.com/goccy/go-yaml", "go.uber.org/goleak"}, nil},
		{"extensiontest internal", "extension/extensiontest", []string{module + "/internal/sqlite"}, []string{module + "/internal/sqlite"}},
		{"llmtest extensions", "llm/llmtest", []string{module + "/extensions/web"}, []string{module + "/extensions/web"}},
		{"extension using public api", "extensions/kv", []string{module + "/extension", module + "/tool", "github.com/goccy/go-yaml"}, nil},
		{"api with vocabulary and extension", "api", []string{module + "/chat", module + "/extension", "encoding/json"}, nil},
		{"api importing internal", "api", []string{module + "/internal/eventbus"}, []string{module + "/internal/eventbus"}},
		{"api importing third party", "api", []string{"github.com/coder/websocket"}, []string{"github.com/coder/websocket"}},
		{"api importing an extension", "api", []string{module + "/extensions/web"}, []string{module + "/extensions/web"}},
		{"web using api", "extensions/web", []string{module + "/api", "github.com/coder/websocket"}, nil},
		{"kernel using api", "internal/kernel", []string{module + "/api"}, nil},
		{"extension own subpackage", "extensions/web", []string{module + "/extensions/web/static"}, nil},
		{"extension importing another", "extensions/pulse", []string{module + "/extensions/kv"}, []string{module + "/extensions/kv"}},
		{"extension prefix is not a tree", "extensions/web", []string{module + "/extensions/webhook"}, []string{module + "/extensions/webhook"}},
		{"extension importing internal", "extensions/kv", []string{module + "/internal/sqlite"}, []string{module + "/internal/sqlite"}},
		{"extension importing app", "extensions/kv", []string{module + "/internal/app"}, []string{module + "/internal/app"}},
		{"extension importing cmd", "extensions/kv", []string{module + "/cmd/reverie"}, []string{module + "/cmd/reverie"}},
		{"standard imports all", "extensions/standard", []string{module + "/extensions/web", module + "/extensions/kv"}, nil},
		{"internal importing extension", "internal/router", []string{module + "/extensions/web"}, []string{module + "/extensions/web"}},
		{"internal importing extension api", "internal/kernel", []string{module + "/extension", module + "/internal/sqlite"}, nil},
		{"app importing extensions", "internal/app", []string{module + "/extensions/standard"}, nil},
		{"apptest importing extensions", "internal/apptest", []string{module + "/extensions/web"}, nil},
		{"apptest subpackage", "internal/apptest/fakechannel", []string{module + "/extensions/web"}, nil},
		{"app prefix is not app", "internal/apple", []string{module + "/extensions/web"}, []string{module + "/extensions/web"}},
		{"cmd imports anything", "cmd/reverie", []string{module + "/internal/app", module + "/extensions/standard"}, nil},
		{"bench programs import anything", "bench/turnload", []string{module + "/internal/memory", module + "/extensions/web"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range violations(tc.pkg, tc.imports) {
				imp := strings.SplitN(strings.SplitN(v, " → ", 2)[1], ":", 2)[0]
				got = append(got, imp)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("violations(%s, %v) reported %v, want %v", tc.pkg, tc.imports, got, tc.want)
			}
		})
	}
}

// violations returns "pkg → import: rule" for every import of the package
// rel (relative to the module) that breaks the import direction.
func violations(rel string, imports []string) []string {
	var out []string
	report := func(imp, rule string) {
		out = append(out, fmt.Sprintf("%s → %s: %s", displayName(rel), imp, rule))
	}
	for _, imp := range imports {
		if imp == "C" || imp == "unsafe" {
			continue
		}
		mrel, inModule := relative(imp)
		std := !inModule && isStdlib(imp)
		switch {
		case under(rel, "cmd"), under(rel, "bench"):
			// The binaries and the benchmark programs may import anything.

		case moduleImportsFor[rel] != nil:
			switch {
			case std:
			case inModule && !slices.Contains(moduleImportsFor[rel], mrel):
				report(imp, fmt.Sprintf("%s may import only %s from this module", rel, listOrNone(moduleImportsFor[rel])))
			case !inModule && !slices.ContainsFunc(thirdPartyFor[rel], func(m string) bool { return under(imp, m) }):
				report(imp, fmt.Sprintf("%s may import only the standard library%s", rel, thirdPartyNote(thirdPartyFor[rel])))
			}

		case under(rel, "extensions"):
			if !inModule {
				continue
			}
			own := extensionTree(rel)
			switch {
			case under(mrel, "extensions"):
				if rel != "extensions/standard" && !under(mrel, own) {
					report(imp, "extensions never import each other (only extensions/standard bundles them)")
				}
			case under(mrel, "internal"):
				if !slices.Contains(internalAllowedForExtensions[own], mrel) || under(mrel, "internal/app") {
					report(imp, "extensions use the public API (extension.Host), not internal packages")
				}
			case under(mrel, "cmd"):
				report(imp, "nothing imports cmd")
			}

		case under(rel, "internal"):
			if !inModule {
				continue
			}
			switch {
			case under(mrel, "extensions"):
				if !slices.ContainsFunc(compositionRoots, func(r string) bool { return under(rel, r) }) {
					report(imp, "internal packages never import extensions (only internal/app and internal/apptest)")
				}
			case under(mrel, "cmd"):
				report(imp, "nothing imports cmd")
			}

		default: // other public packages: extension/extensiontest, llm/llmtest, …
			if !inModule {
				continue
			}
			switch {
			case under(mrel, "internal"):
				report(imp, "public packages never import internal packages (out-of-tree code could not use them)")
			case under(mrel, "extensions"):
				report(imp, "public packages never import extensions")
			case under(mrel, "cmd"):
				report(imp, "nothing imports cmd")
			}
		}
	}
	return out
}

// relative returns path relative to the module ("" for the module root)
// and whether it is in the module.
func relative(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func displayName(rel string) string {
	if rel == "" {
		return module
	}
	return rel
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// extensionTree is "extensions/<name>" for any package inside that tree.
func extensionTree(rel string) string {
	parts := strings.SplitN(rel, "/", 3)
	if len(parts) < 2 {
		return rel
	}
	return parts[0] + "/" + parts[1]
}

// isStdlib reports whether an import path (not in this module) is in the
// standard library: its first element has no dot.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

func thirdPartyNote(mods []string) string {
	if len(mods) == 0 {
		return ""
	}
	return " and " + strings.Join(mods, ", ")
}

// hasPackageDoc reports whether any of the files carries a package doc
// comment.
func hasPackageDoc(dir string, files []string) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return false, fmt.Errorf("parse %s: %w", name, err)
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			return true, nil
		}
	}
	return false, nil
}

// listPackages runs `go list -e -json ./...` at the module root. Packages
// that do not build are still listed (with whatever imports could be
// read), so a broken package elsewhere does not hide violations.
func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	listOnce.Do(func() { listed, listErr = goList(t) })
	if listErr != nil {
		t.Fatal(listErr)
	}
	return listed
}

var (
	listOnce sync.Once
	listed   []listedPackage
	listErr  error
)

func goList(t *testing.T) ([]listedPackage, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("find the go tool: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "list", "-e",
		"-json=ImportPath,Dir,Name,GoFiles,CgoFiles,Imports,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			t.Logf("note: %s does not load: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, errors.New("go list found no packages")
	}
	slices.SortFunc(pkgs, func(a, b listedPackage) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return pkgs, nil
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

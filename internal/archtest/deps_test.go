package archtest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/deps*.golden from `go list -deps` of the commands")

// depsGolden lists every package from outside this module that is linked
// into the reverie binary.
const depsGolden = "testdata/deps.golden"

// depsHeader opens the golden file.
const depsHeader = `# Every package from outside this module linked into the reverie binary
# (go list -deps ./cmd/reverie, CGO_ENABLED=0 GOOS=linux GOARCH=amd64;
# the standard library and this module's own packages are left out).
# A new dependency shows up here as a diff to review: is it worth its bytes?
# Regenerate with: go test ./internal/archtest -run TestDependencies -update
`

// supervisorDepsGolden lists every package linked into the lean
// supervisor, this module's included: it must stay small (see
// cmd/reverie-supervisor).
const supervisorDepsGolden = "testdata/deps-supervisor.golden"

const supervisorDepsHeader = `# Every package linked into the lean supervisor, reverie-supervisor
# (go list -deps ./cmd/reverie-supervisor, CGO_ENABLED=0 GOOS=linux GOARCH=amd64;
# the standard library is left out, this module's packages are listed).
# It must not grow: every package's init costs private memory in the one
# process that runs all the time (issue 18). TestSupervisorDependencies
# also refuses the agent's packages outright.
# Regenerate with: go test ./internal/archtest -run TestSupervisorDependencies -update
`

// TestDependencies compares the packages linked into the binary with
// testdata/deps.golden (in the spirit of tailscale's depaware), so that
// adding a dependency, directly or through a dependency's new import, is a
// reviewed change rather than a silent one.
func TestDependencies(t *testing.T) {
	got, err := linkedPackages("./cmd/reverie", false)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "TestDependencies", depsGolden, depsHeader, got)
}

// TestSupervisorDependencies does the same for the lean supervisor, and
// fails outright when it links any of the agent's packages or a module
// other than the logging package's lumberjack: the reason it exists is to
// leave their package initialisation out of the supervisor's process.
func TestSupervisorDependencies(t *testing.T) {
	got, err := linkedPackages("./cmd/reverie-supervisor", true)
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/reverie-ai/reverie/"
	for _, pkg := range got {
		own, isOwn := strings.CutPrefix(pkg, module)
		switch {
		case !isOwn && !strings.HasPrefix(pkg, "gopkg.in/natefinch/lumberjack.v2"):
			t.Errorf("reverie-supervisor links %s: no module but lumberjack belongs in the lean supervisor", pkg)
		case isOwn && (hasPathPrefix(own, "internal/app") || hasPathPrefix(own, "internal/config") ||
			hasPathPrefix(own, "extensions") || hasPathPrefix(own, "extension")):
			t.Errorf("reverie-supervisor links %s, a package of the agent", pkg)
		}
	}
	checkGolden(t, "TestSupervisorDependencies", supervisorDepsGolden, supervisorDepsHeader, got)
}

// hasPathPrefix reports whether the slash-separated path is dir or lies
// under it.
func hasPathPrefix(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// checkGolden compares the sorted package list got with the golden file
// (rewriting it with -update); test names the test to run with -update.
func checkGolden(t *testing.T, test, golden, header string, got []string) {
	t.Helper()
	want := header + strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(golden, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	var listed []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	slices.Sort(listed)
	added, removed := diffSorted(listed, got)
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	t.Errorf("the packages linked in changed (%s); review, then run\n"+
		"  go test ./internal/archtest -run %s -update\nadded:\n  %s\nremoved:\n  %s",
		golden, test, strings.Join(added, "\n  "), strings.Join(removed, "\n  "))
}

// linkedPackages runs go list -deps on the command pkg for the release
// platform and returns the import paths outside the standard library, and
// outside this module unless own, sorted.
func linkedPackages(pkg string, own bool) ([]string, error) {
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
	cmd := exec.CommandContext(ctx, goTool, "list", "-deps",
		"-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Main}}{{end}}{{end}}", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w\n%s", pkg, err, stderr.String())
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		path, main, _ := strings.Cut(strings.TrimSpace(line), " ")
		if path == "" || (main == "true" && !own) {
			continue
		}
		pkgs = append(pkgs, path)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list -deps %s in %s found no dependencies", pkg, filepath.Clean(root))
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs), nil
}

// diffSorted returns what is in b and not in a, and what is in a and not
// in b.
func diffSorted(a, b []string) (added, removed []string) {
	for _, s := range b {
		if _, found := slices.BinarySearch(a, s); !found {
			added = append(added, s)
		}
	}
	for _, s := range a {
		if _, found := slices.BinarySearch(b, s); !found {
			removed = append(removed, s)
		}
	}
	return added, removed
}

func TestDiffSorted(t *testing.T) {
	tests := []struct {
		name           string
		a, b           []string
		added, removed []string
	}{
		{name: "same", a: []string{"x", "y"}, b: []string{"x", "y"}},
		{name: "added", a: []string{"x"}, b: []string{"w", "x", "z"}, added: []string{"w", "z"}},
		{name: "removed", a: []string{"x", "y"}, b: []string{"y"}, removed: []string{"x"}},
		{name: "both", a: []string{"a", "c"}, b: []string{"b", "c"}, added: []string{"b"}, removed: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			added, removed := diffSorted(tc.a, tc.b)
			if !slices.Equal(added, tc.added) || !slices.Equal(removed, tc.removed) {
				t.Fatalf("diffSorted = +%v -%v, want +%v -%v", added, removed, tc.added, tc.removed)
			}
		})
	}
}

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

var update = flag.Bool("update", false, "rewrite testdata/deps.golden from `go list -deps ./cmd/reverie`")

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

// TestDependencies compares the packages linked into the binary with
// testdata/deps.golden (in the spirit of tailscale's depaware), so that
// adding a dependency, directly or through a dependency's new import, is a
// reviewed change rather than a silent one.
func TestDependencies(t *testing.T) {
	got, err := linkedPackages()
	if err != nil {
		t.Fatal(err)
	}
	want := depsHeader + strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(depsGolden, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(depsGolden)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	var golden []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			golden = append(golden, line)
		}
	}
	slices.Sort(golden)
	added, removed := diffSorted(golden, got)
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	t.Errorf("the packages linked into reverie changed; review, then run\n"+
		"  go test ./internal/archtest -run TestDependencies -update\nadded:\n  %s\nremoved:\n  %s",
		strings.Join(added, "\n  "), strings.Join(removed, "\n  "))
}

// linkedPackages runs go list -deps on the command for the release
// platform and returns the import paths outside the standard library and
// this module, sorted.
func linkedPackages() ([]string, error) {
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
		"-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Main}}{{end}}{{end}}", "./cmd/reverie")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./cmd/reverie: %w\n%s", err, stderr.String())
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		path, main, _ := strings.Cut(strings.TrimSpace(line), " ")
		if path == "" || main == "true" {
			continue
		}
		pkgs = append(pkgs, path)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list -deps ./cmd/reverie in %s found no dependencies", filepath.Clean(root))
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

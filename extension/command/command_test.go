package command

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func newTest(Env) *cobra.Command { return &cobra.Command{Use: "test"} }

// Register refuses what would make the command line ambiguous or crash
// later, naming the command; Registered lists the rest by name.
func TestRegister(t *testing.T) {
	// A registry of its own, so that the test runs again (go test -count=2)
	// and leaves the package's as it was.
	mu.Lock()
	saved := registry
	registry = map[string]Info{}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		registry = saved
		mu.Unlock()
	})
	Register(Info{Extension: "one", Name: "zeta", New: newTest})
	Register(Info{Extension: "two", Name: "alpha-2", New: newTest})
	Register(Info{Extension: "two", Parent: "memory", Name: "zeta", New: newTest})
	tests := []struct {
		name string
		info Info
		want string // in the panic
	}{
		{"duplicate name", Info{Extension: "three", Name: "zeta", New: newTest}, `"zeta" registered twice (by one and three)`},
		{"empty name", Info{Extension: "one", New: newTest}, `invalid name ""`},
		{"upper case", Info{Extension: "one", Name: "Zeta", New: newTest}, `invalid name "Zeta"`},
		{"space", Info{Extension: "one", Name: "a b", New: newTest}, `invalid name "a b"`},
		{"no extension", Info{Name: "beta", New: newTest}, `"beta" names no extension`},
		{"no constructor", Info{Extension: "one", Name: "beta"}, `"beta" has no constructor`},
		{"duplicate under a parent", Info{Extension: "three", Parent: "memory", Name: "zeta", New: newTest}, `"memory zeta" registered twice (by two and three)`},
		{"invalid parent", Info{Extension: "one", Parent: "Memory", Name: "beta", New: newTest}, `"beta": invalid parent "Memory"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic %v, want one containing %q", r, tc.want)
				}
			}()
			Register(tc.info)
		})
	}
	var names []string
	for _, info := range Registered() {
		names = append(names, info.Extension+"/"+strings.TrimSpace(info.Parent+" "+info.Name))
	}
	if got := strings.Join(names, " "); got != "two/alpha-2 one/zeta two/memory zeta" {
		t.Errorf("Registered: %s", got)
	}
}

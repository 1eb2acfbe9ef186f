package archtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// maxBinaryBytes is the size bar of the stripped release binary with every
// channel (web, terminal, Telegram, Matrix) and MCP linked in: 60 MB.
const maxBinaryBytes = 60_000_000

// TestReleaseBinary links the release binary the way a release is built
// (CGO_ENABLED=0, -s -w) with the linker's dependency dump, and checks two
// things that only show up at link time:
//
//   - no reachable function looks methods up by a name known only at run
//     time (reflect.Value.MethodByName with a variable, as text/template
//     does). One such function makes the linker keep every exported method
//     of every type that reaches an interface: 18 MB of 73.5 when cobra's
//     version template was linked;
//   - the stripped binary stays within maxBinaryBytes.
func TestReleaseBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("links the whole binary")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go tool: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "reverie")
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w -dumpdep", "-o", bin, "./cmd/reverie")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build ./cmd/reverie: %v\n%s", err, tail(stderr.String(), 2000))
	}
	if chains := reflectMethodChains(stderr.String()); len(chains) > 0 {
		t.Errorf("functions that look methods up by a run-time name are linked in, so the linker keeps every exported method:\n  %s",
			strings.Join(chains, "\n  "))
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stripped binary: %.1f MB", float64(fi.Size())/1e6)
	if fi.Size() > maxBinaryBytes {
		t.Errorf("stripped binary is %.1f MB, over the %.0f MB bar", float64(fi.Size())/1e6, maxBinaryBytes/1e6)
	}
}

// reflectMethodChains reads the linker's -dumpdep output ("from -> to"
// lines, a function marked "<ReflectMethod>") and returns, for each marked
// function reached from outside the reflect package, the chain of callers
// that reaches it (at most eight deep), so the failure names the import to
// remove. The reflect package's own iterators are marked too, but they are
// only kept when reachable through an interface call and do not switch
// the linker's conservative mode on by themselves.
func reflectMethodChains(dump string) []string {
	callers := map[string]string{}
	var marked []string
	for line := range strings.Lines(dump) {
		from, to, ok := strings.Cut(strings.TrimSpace(line), " -> ")
		if !ok {
			continue
		}
		from, _, _ = strings.Cut(from, " ")
		to, tag, _ := strings.Cut(to, " ")
		if _, seen := callers[to]; !seen {
			callers[to] = from
		}
		if tag == "<ReflectMethod>" && !strings.HasPrefix(to, "reflect.") && !slices.Contains(marked, to) {
			marked = append(marked, to)
		}
	}
	var chains []string
	for _, fn := range marked {
		chain := []string{fn}
		for cur := fn; len(chain) < 8; {
			up, ok := callers[cur]
			if !ok || slices.Contains(chain, up) {
				break
			}
			chain = append(chain, up)
			cur = up
		}
		chains = append(chains, strings.Join(chain, " <- "))
	}
	return chains
}

func TestReflectMethodChains(t *testing.T) {
	tests := []struct {
		name string
		dump string
		want []string
	}{
		{name: "none", dump: "main.main -> fmt.Println\nfmt.Println -> os.Stdout\n"},
		{
			name: "reflect's own iterators do not count",
			dump: "reflect.Value.Methods -> reflect.Value.Methods.func1 <ReflectMethod>\n",
		},
		{
			name: "template reached from main",
			dump: "main.main -> cobra.(*Command).SetVersionTemplate\n" +
				"cobra.(*Command).SetVersionTemplate -> text/template.(*state).evalField <ReflectMethod>\n" +
				"text/template.(*state).evalField <ReflectMethod> -> reflect.Value.MethodByName\n",
			want: []string{"text/template.(*state).evalField <- cobra.(*Command).SetVersionTemplate <- main.main"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := reflectMethodChains(tc.dump); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("…%s", s[len(s)-n:])
}

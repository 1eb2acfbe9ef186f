package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzExtension is an extension section with the kinds of fields real
// extensions have.
type fuzzExtension struct {
	Listen  string            `yaml:"listen"`
	Timeout time.Duration     `yaml:"timeout"`
	Limit   int64             `yaml:"limit"`
	Rate    float64           `yaml:"rate"`
	On      bool              `yaml:"on"`
	Token   Secret            `yaml:"token"`
	Hosts   []string          `yaml:"hosts"`
	Labels  map[string]string `yaml:"labels"`
	Nested  struct {
		Depth int `yaml:"depth"`
	} `yaml:"nested"`
}

// FuzzLoad feeds the decoder arbitrary config files and one environment
// override: it must never panic or hang, every problem must be a *Error
// that names where it is (file line or variable), and a file that loads
// must validate and decode its extension sections without panicking, and
// load the same way twice. Seeds: f.Add below and testdata/fuzz/FuzzLoad;
// `go test -run FuzzLoad` runs them, `go test -fuzz FuzzLoad` explores.
func FuzzLoad(f *testing.F) {
	f.Add(DefaultFile(), "LOG__LEVEL", "debug")
	f.Add([]byte("log:\n  level: info\n  colour: red\n"), "", "")
	f.Add([]byte("web:\n  listen: 127.0.0.1:0\n  token: {env: TOKEN}\n"), "WEB__LISTEN", "localhost")
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"), "TIMEZONE", "Europe/Berlin")
	f.Add([]byte("log:\n  level: [x\n"), "", "")
	f.Add([]byte("a: &x [*x]\n"), "", "")
	f.Add([]byte("limits:\n  max_message_chars: -1\n"), "LIMITS__MAX_MESSAGE_CHARS", "lots")
	f.Add([]byte("models:\n  roles:\n    main: [x/y]\n"), "MODELS__ROLES", "{main: [a/b]}")
	f.Add([]byte("fuzzext:\n  nested: {depth: 3}\n  labels: {a: b}\n  hosts: [a, b]\n"), "FUZZEXT__TIMEOUT", "5s")
	f.Fuzz(func(t *testing.T, file []byte, name, value string) {
		if len(file) > 64<<10 || strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) {
			return
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"TOKEN=secret-value"}
		if name != "" {
			env = append(env, EnvPrefix+name+"="+value)
		}
		ids := []string{"web", "fuzzext"}
		c, err := Load(path, env, ids)
		if err != nil {
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("Load error is not a *config.Error: %T %v", err, err)
			}
			if cerr.Var == "" && (cerr.File == "" || cerr.Line <= 0) {
				t.Fatalf("error does not say where the problem is: %#v", cerr)
			}
			return
		}
		_ = c.Validate()
		_ = c.Warnings()
		for _, id := range ids {
			c.ExtensionEnabled(id, true)
			c.ExtensionConfigured(id)
			var v fuzzExtension
			if err := c.DecodeExtension(id, &v); err != nil {
				var cerr *Error
				if !errors.As(err, &cerr) {
					t.Fatalf("DecodeExtension(%s) error is not a *config.Error: %T %v", id, err, err)
				}
			}
		}
		again, err := Load(path, env, ids)
		if err != nil {
			t.Fatalf("the second load failed: %v", err)
		}
		if again.Log != c.Log || again.Timezone != c.Timezone || again.Language != c.Language {
			t.Fatalf("two loads differ: %+v vs %+v", again.Log, c.Log)
		}
	})
}

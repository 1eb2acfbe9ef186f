package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stripMeta returns the exported values only.
func stripMeta(c *Config) Config {
	out := *c
	out.meta = nil
	return out
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     []string
		extIDs  []string
		line    int
		key     string
		envVar  string
		message string
	}{
		{
			name:    "unknown top-level key",
			yaml:    "timezone: UTC\nfoo: 1\n",
			line:    2,
			key:     "foo",
			message: `config.yaml:2: unknown key "foo"`,
		},
		{
			name:    "nested unknown key with suggestion",
			yaml:    "log:\n  level: info\n  levle: debug\n",
			line:    3,
			key:     "log.levle",
			message: `config.yaml:3: unknown key "log.levle" (did you mean "level"?)`,
		},
		{
			name:    "wrong type int",
			yaml:    "log:\n  max_size_mb: ten\n",
			line:    2,
			key:     "log.max_size_mb",
			message: `log.max_size_mb: expected a whole number, got the string "ten"`,
		},
		{
			name:    "wrong type bool",
			yaml:    "log:\n  file: yes please\n",
			line:    2,
			key:     "log.file",
			message: "expected true or false",
		},
		{
			name:    "bad duration",
			yaml:    "bus:\n  retention: 7 days\n",
			line:    2,
			key:     "bus.retention",
			message: `"7 days" is not a duration`,
		},
		{
			name:    "mapping where a value is expected",
			yaml:    "timezone:\n  name: UTC\n",
			line:    2,
			key:     "timezone",
			message: "expected a string, got a mapping",
		},
		{
			name:    "section given a scalar",
			yaml:    "log: debug\n",
			line:    1,
			key:     "log",
			message: "expected a mapping of settings",
		},
		{
			name:    "duplicate key",
			yaml:    "log:\n  level: info\n  level: debug\n",
			line:    3,
			message: `the key "level" is set twice in the same section (first on line 2)`,
		},
		{
			name:    "syntax error has a line",
			yaml:    "log:\n  level: [info\n",
			line:    2,
			message: "a [ … ] list is not closed with ]",
		},
		{
			name:    "tab indentation",
			yaml:    "log:\n\tlevel: info\n",
			line:    2,
			message: "indented with a tab; YAML needs spaces",
		},
		{
			name:    "a line indented too far is its own line",
			yaml:    "log:\n  level: info\n   file: false\n",
			line:    3,
			message: "not lined up with the keys above it",
		},
		{
			name:    "a line indented too little",
			yaml:    "log:\n  level: info\n file: false\n",
			line:    3,
			message: "not lined up with the keys above it",
		},
		{
			name:    "colon in a value",
			yaml:    "log:\n  level: info: debug\n",
			line:    2,
			message: `put the value in quotes`,
		},
		{
			name:    "unclosed quote",
			yaml:    "log:\n  level: \"info\n",
			line:    2,
			message: `has no closing "`,
		},
		{
			name:    "missing colon",
			yaml:    "log:\n  level info\n",
			line:    2,
			key:     "log",
			message: `a setting needs a colon and a space after its name: "level: …"`,
		},
		{
			name:    "unknown key not an extension",
			yaml:    "web:\n  listen: 127.0.0.1:1\n",
			line:    1,
			key:     "web",
			message: `unknown key "web"`,
		},
		{
			name:    "extension enabled must be bool",
			yaml:    "web:\n  enabled: maybe\n",
			extIDs:  []string{"web"},
			line:    2,
			key:     "web.enabled",
			message: "expected true or false",
		},
		{
			name:    "extension section must be a mapping",
			yaml:    "web: on\n",
			extIDs:  []string{"web"},
			line:    1,
			key:     "web",
			message: "expected a mapping of settings",
		},
		{
			name:    "bad env int",
			env:     []string{"REVERIE_LOG__MAX_SIZE_MB=big"},
			key:     "log.max_size_mb",
			envVar:  "REVERIE_LOG__MAX_SIZE_MB",
			message: `environment variable REVERIE_LOG__MAX_SIZE_MB: log.max_size_mb: "big" is not a whole number`,
		},
		{
			name:    "bad env duration",
			env:     []string{"REVERIE_BUS__RETENTION=forever"},
			key:     "bus.retention",
			envVar:  "REVERIE_BUS__RETENTION",
			message: "is not a duration",
		},
		{
			name:    "env var for unknown key",
			env:     []string{"REVERIE_LOG__LEVLE=debug"},
			key:     "log.levle",
			envVar:  "REVERIE_LOG__LEVLE",
			message: `unknown key "log.levle" (did you mean "level"?)`,
		},
		{
			name:    "env var below a single value",
			env:     []string{"REVERIE_LOG__LEVEL__X=debug"},
			key:     "log.level.x",
			envVar:  "REVERIE_LOG__LEVEL__X",
			message: "unknown key",
		},
		{
			name:    "bad extension enabled env",
			env:     []string{"REVERIE_WEB__ENABLED=perhaps"},
			extIDs:  []string{"web"},
			key:     "web.enabled",
			envVar:  "REVERIE_WEB__ENABLED",
			message: "is not true or false",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			_, err := Load(path, tc.env, tc.extIDs)
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("Load error = %v (%T), want *Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not contain %q", err, tc.message)
			}
			if cerr.Line != tc.line {
				t.Errorf("Line = %d, want %d (%v)", cerr.Line, tc.line, err)
			}
			if tc.key != "" && cerr.Key != tc.key {
				t.Errorf("Key = %q, want %q", cerr.Key, tc.key)
			}
			if cerr.Var != tc.envVar {
				t.Errorf("Var = %q, want %q", cerr.Var, tc.envVar)
			}
			if tc.envVar == "" && tc.line > 0 && cerr.File != path {
				t.Errorf("File = %q, want %q", cerr.File, path)
			}
		})
	}
}

func TestLoadValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		want func(*Config)
	}{
		{
			name: "missing file gives defaults",
			want: func(*Config) {},
		},
		{
			name: "empty file gives defaults",
			yaml: "# nothing here\n",
			want: func(*Config) {},
		},
		{
			name: "null values keep defaults",
			yaml: "log:\n  level:\n",
			want: func(*Config) {},
		},
		{
			name: "file values",
			yaml: "timezone: Europe/Berlin\nlog:\n  level: debug\n  file: false\nbus:\n  retention: 24h\n",
			want: func(c *Config) {
				c.Timezone = "Europe/Berlin"
				c.Log.Level = "debug"
				c.Log.File = false
				c.Bus.Retention = 24 * time.Hour
			},
		},
		{
			name: "env override int",
			env:  []string{"REVERIE_LOG__MAX_SIZE_MB=42"},
			want: func(c *Config) { c.Log.MaxSizeMB = 42 },
		},
		{
			name: "env override duration",
			env:  []string{"REVERIE_SUPERVISOR__RESTART_BACKOFF_MAX=2m30s"},
			want: func(c *Config) { c.Supervisor.RestartBackoffMax = 150 * time.Second },
		},
		{
			name: "env override bool",
			env:  []string{"REVERIE_LOG__FILE=false"},
			want: func(c *Config) { c.Log.File = false },
		},
		{
			name: "env override string beats file",
			yaml: "log:\n  level: warn\n",
			env:  []string{"REVERIE_LOG__LEVEL=debug"},
			want: func(c *Config) { c.Log.Level = "debug" },
		},
		{
			name: "env override top-level scalar",
			env:  []string{"REVERIE_TIMEZONE=Asia/Tokyo", "REVERIE_LANGUAGE=ja"},
			want: func(c *Config) { c.Timezone = "Asia/Tokyo"; c.Language = "ja" },
		},
		{
			name: "non-config variables ignored",
			env: []string{
				"REVERIE_HOME=/tmp/x", "REVERIE_MODEL=gpt", "REVERIE_SOMETHING=1", "REVERIE_LOG=debug",
				"HOME=/root", "REVERIE_LOG__LEVEL=", // empty means unset
			},
			want: func(*Config) {},
		},
		{
			name: "anchors and aliases",
			yaml: "log:\n  level: &lvl warn\n  format: text\nlanguage: *lvl\n",
			want: func(c *Config) { c.Log.Level = "warn"; c.Language = "warn" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if tc.yaml != "" {
				path = writeConfig(t, tc.yaml)
			}
			got, err := Load(path, tc.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tc.want(&want)
			if g := stripMeta(got); !reflect.DeepEqual(g, want) {
				t.Errorf("got  %+v\nwant %+v", g, want)
			}
		})
	}
}

func TestUnknownEnvSectionWarns(t *testing.T) {
	c, err := Load("", []string{"REVERIE_TELEGRAM__TOKEN=x"}, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "REVERIE_TELEGRAM__TOKEN") {
		t.Errorf("warnings = %q", ws)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     []string
		key     string
		line    int
		envVar  string
		message string
	}{
		{name: "defaults are valid"},
		{name: "bad timezone", yaml: "timezone: Mars/Olympus\n", key: "timezone", line: 1, message: "unknown time zone"},
		{name: "bad level", yaml: "log:\n  level: verbose\n", key: "log.level", line: 2, message: "unknown level"},
		{name: "bad format", yaml: "log:\n  format: xml\n", key: "log.format", line: 2, message: "unknown format"},
		{name: "negative limit", yaml: "limits:\n  pulse_chars: -1\n", key: "limits.pulse_chars", line: 2, message: "must be positive"},
		{name: "zero skills limit", yaml: "limits:\n  skills_chars: 0\n", key: "limits.skills_chars", line: 2, message: "must be positive"},
		{name: "backoff max below min", yaml: "supervisor:\n  restart_backoff_min: 10s\n  restart_backoff_max: 5s\n",
			key: "supervisor.restart_backoff_max", line: 3, message: "must not be less than"},
		{name: "bad language", yaml: "language: english!\n", key: "language", line: 1, message: "not a language code"},
		{name: "bad level from env names the variable", env: []string{"REVERIE_LOG__LEVEL=loud"},
			key: "log.level", envVar: "REVERIE_LOG__LEVEL", message: "environment variable REVERIE_LOG__LEVEL"},
		{name: "negative limit from env", env: []string{"REVERIE_LIMITS__MEMORIES_CHARS=-5"},
			key: "limits.memories_chars", envVar: "REVERIE_LIMITS__MEMORIES_CHARS", message: "must be positive"},
		{name: "mcp memory backend", yaml: "memory:\n  backend: mcp\n  mcp:\n    server: openmemory\n"},
		{name: "mcp memory backend without a server", yaml: "memory:\n  backend: mcp\n",
			key: "memory.mcp.server", message: "needs the name of a server"},
		{name: "built-in sentence encoder", yaml: "memory:\n  embedding:\n    model: builtin/use-lite\n"},
		{name: "built-in sentence encoder at its size", yaml: "memory:\n  embedding:\n    model: builtin/use-lite\n    dimensions: 512\n"},
		{name: "built-in hashing embedder", yaml: "memory:\n  embedding:\n    model: builtin/hashing\n"},
		{name: "built-in hashing embedder at a size", yaml: "memory:\n  embedding:\n    model: builtin/hashing\n    dimensions: 256\n"},
		{name: "unknown built-in model", yaml: "memory:\n  embedding:\n    model: builtin/bert\n",
			key: "memory.embedding.model", line: 3, message: "the built-in models are"},
		{name: "built-in model at another size", yaml: "memory:\n  embedding:\n    model: builtin/use-lite\n    dimensions: 256\n",
			key: "memory.embedding.dimensions", line: 4, message: "has 512 dimensions"},
		{name: "embedding backend not defined", yaml: "memory:\n  embedding:\n    model: local/nomic-embed-text\n",
			key: "memory.embedding.model", line: 3, message: "not defined under models.backends"},
		{name: "mcp memory arguments not JSON", yaml: "memory:\n  backend: mcp\n  mcp:\n    server: m\n    store:\n      arguments: '{text}'\n",
			key: "memory.mcp.store.arguments", line: 6, message: "must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			c, err := Load(path, tc.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if tc.message == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("Validate() = %v, want *Error", err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not contain %q", err, tc.message)
			}
			if cerr.Key != tc.key || cerr.Line != tc.line || cerr.Var != tc.envVar {
				t.Errorf("got key=%q line=%d var=%q, want key=%q line=%d var=%q",
					cerr.Key, cerr.Line, cerr.Var, tc.key, tc.line, tc.envVar)
			}
		})
	}
}

func TestDefaultValidates(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Location() == nil {
		t.Fatal("nil location")
	}
}

// TestTemplateIsDefault keeps the shipped config.yaml and Default() in step:
// the template decodes to exactly the defaults and sets every core key.
func TestTemplateIsDefault(t *testing.T) {
	path := writeConfig(t, string(DefaultFile()))
	c, err := Load(path, nil, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stripMeta(c), Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("template decodes to\n%+v\nwant\n%+v", got, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if ws := c.Warnings(); len(ws) != 0 {
		t.Errorf("template has warnings: %q", ws)
	}
	var leaves []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for name, idx := range structFields(t) {
			f := t.FieldByIndex(idx)
			if f.Type.Kind() == reflect.Struct && f.Type != secretType {
				walk(f.Type, join(prefix, name))
				continue
			}
			leaves = append(leaves, join(prefix, name))
		}
	}
	walk(reflect.TypeFor[Config](), "")
	for _, k := range leaves {
		if _, ok := c.meta.lines[k]; !ok {
			t.Errorf("template does not document key %q", k)
		}
	}
}

// extConfig is a typical extension section.
type extConfig struct {
	Listen  string            `yaml:"listen"`
	Timeout time.Duration     `yaml:"timeout"`
	Users   []string          `yaml:"users"`
	Limits  map[string]int    `yaml:"limits"`
	Token   Secret            `yaml:"token"`
	Nested  *extNested        `yaml:"nested"`
	Labels  map[string]string `yaml:"labels"`
}

type extNested struct {
	Depth int  `yaml:"depth"`
	On    bool `yaml:"on"`
}

func TestDecodeExtension(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     []string
		want    func(*extConfig)
		line    int
		key     string
		envVar  string
		message string
	}{
		{
			name: "missing section leaves defaults",
			want: func(*extConfig) {},
		},
		{
			name: "section decoded, enabled ignored",
			yaml: "web:\n  enabled: true\n  listen: 127.0.0.1:9\n  timeout: 3s\n  users: [a, b]\n  nested:\n    depth: 2\n",
			want: func(c *extConfig) {
				c.Listen = "127.0.0.1:9"
				c.Timeout = 3 * time.Second
				c.Users = []string{"a", "b"}
				c.Nested = &extNested{Depth: 2}
			},
		},
		{
			name:    "strict unknown key with line",
			yaml:    "timezone: UTC\nweb:\n  listen: x:1\n  listne: y:2\n",
			line:    4,
			key:     "web.listne",
			message: `config.yaml:4: unknown key "web.listne" (did you mean "listen"?)`,
		},
		{
			name:    "wrong type in extension",
			yaml:    "web:\n  users: alice\n",
			line:    2,
			key:     "web.users",
			message: "expected a list",
		},
		{
			name:    "nested wrong type",
			yaml:    "web:\n  nested:\n    depth: deep\n",
			line:    3,
			key:     "web.nested.depth",
			message: "expected a whole number",
		},
		{
			name: "env overrides file",
			yaml: "web:\n  listen: 127.0.0.1:1\n",
			env: []string{
				"REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_WEB__TIMEOUT=1m", "REVERIE_WEB__USERS=[x, y]",
				"REVERIE_WEB__NESTED__ON=true", "REVERIE_WEB__LIMITS__DAILY=7", "REVERIE_WEB__ENABLED=false",
			},
			want: func(c *extConfig) {
				c.Listen = "127.0.0.1:0"
				c.Timeout = time.Minute
				c.Users = []string{"x", "y"}
				c.Nested = &extNested{On: true}
				c.Limits = map[string]int{"daily": 7}
			},
		},
		{
			name:    "env unknown key in extension",
			env:     []string{"REVERIE_WEB__LISTN=1"},
			key:     "web.listn",
			envVar:  "REVERIE_WEB__LISTN",
			message: "unknown key",
		},
		{
			name:    "env bad value in extension",
			env:     []string{"REVERIE_WEB__TIMEOUT=soon"},
			key:     "web.timeout",
			envVar:  "REVERIE_WEB__TIMEOUT",
			message: "is not a duration",
		},
		{
			name:    "env bad list in extension",
			env:     []string{"REVERIE_WEB__USERS={a: 1}"},
			key:     "web.users",
			envVar:  "REVERIE_WEB__USERS",
			message: "expected a list",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			c, err := Load(path, tc.env, []string{"web"})
			if err != nil {
				t.Fatal(err)
			}
			got := extConfig{Listen: "127.0.0.1:8420", Timeout: time.Second}
			err = c.DecodeExtension("web", &got)
			if tc.message != "" {
				var cerr *Error
				if !errors.As(err, &cerr) {
					t.Fatalf("DecodeExtension = %v, want *Error", err)
				}
				if !strings.Contains(err.Error(), tc.message) {
					t.Errorf("error %q does not contain %q", err, tc.message)
				}
				if cerr.Line != tc.line || cerr.Key != tc.key || cerr.Var != tc.envVar {
					t.Errorf("got line=%d key=%q var=%q, want %d %q %q", cerr.Line, cerr.Key, cerr.Var, tc.line, tc.key, tc.envVar)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := extConfig{Listen: "127.0.0.1:8420", Timeout: time.Second}
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestExtensionEnabled(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		env       []string
		defaultOn bool
		want      bool
	}{
		{name: "no section, default on", defaultOn: true, want: true},
		{name: "no section, default off", defaultOn: false, want: false},
		{name: "section without enabled", yaml: "web:\n  listen: x:1\n", defaultOn: true, want: true},
		{name: "file disables", yaml: "web:\n  enabled: false\n", defaultOn: true, want: false},
		{name: "file enables", yaml: "web:\n  enabled: true\n", defaultOn: false, want: true},
		{name: "env beats file", yaml: "web:\n  enabled: false\n", env: []string{"REVERIE_WEB__ENABLED=true"}, want: true},
		{name: "env disables", env: []string{"REVERIE_WEB__ENABLED=0"}, defaultOn: true, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tc.yaml), tc.env, []string{"web"})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ExtensionEnabled("web", tc.defaultOn); got != tc.want {
				t.Errorf("ExtensionEnabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecodeExtensionUnknownID(t *testing.T) {
	c, err := Load("", nil, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	var v extConfig
	if err := c.DecodeExtension("nope", &v); err == nil {
		t.Fatal("want error for an unregistered extension")
	}
	if err := c.DecodeExtension("web", v); err == nil {
		t.Fatal("want error for a non-pointer")
	}
}

func TestExtensionIDClash(t *testing.T) {
	if _, err := Load("", nil, []string{"log"}); err == nil {
		t.Fatal("want error when an extension id is a core key")
	}
}

func TestSecret(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets", "tok"), []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "abs-secret")
	if err := os.WriteFile(abs, []byte("absolute\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		yaml    string
		env     []string
		want    string
		source  string
		warn    bool
		loadErr string
		resErr  string
	}{
		{name: "env", yaml: "web:\n  token: {env: MY_TOKEN}\n", env: []string{"MY_TOKEN=from-env"},
			want: "from-env", source: "environment variable MY_TOKEN"},
		{name: "env block style", yaml: "web:\n  token:\n    env: MY_TOKEN\n", env: []string{"MY_TOKEN=from-env"},
			want: "from-env", source: "environment variable MY_TOKEN"},
		{name: "file relative to data dir", yaml: "web:\n  token: {file: secrets/tok}\n", want: "from-file", source: "file secrets/tok"},
		{name: "file absolute", yaml: "web:\n  token: {file: " + abs + "}\n", want: "absolute", source: "file " + abs},
		{name: "literal warns", yaml: "web:\n  token: s3cr3t-literal\n", want: "s3cr3t-literal", source: "inline", warn: true},
		{name: "env override is a literal without warning", env: []string{"REVERIE_WEB__TOKEN=s3cr3t-env"},
			want: "s3cr3t-env", source: "environment variable REVERIE_WEB__TOKEN"},
		{name: "missing env var", yaml: "web:\n  token: {env: NOPE}\n", resErr: "NOPE is not set"},
		{name: "missing file", yaml: "web:\n  token: {file: secrets/none}\n", resErr: "no such file"},
		{name: "bad form", yaml: "web:\n  token: {vault: x}\n", loadErr: `config.yaml:2: unknown key "web.token.vault"`},
		{name: "two forms", yaml: "web:\n  token: {env: A, file: b}\n", loadErr: "a secret is {env: NAME}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path, tc.env, []string{"web"})
			if err != nil {
				t.Fatal(err)
			}
			var v extConfig
			err = c.DecodeExtension("web", &v)
			if tc.loadErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.loadErr) {
					t.Fatalf("DecodeExtension = %v, want %q", err, tc.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Token.Resolve()
			if tc.resErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.resErr) {
					t.Fatalf("Resolve = %v, want %q", err, tc.resErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Resolve = %q, want %q", got, tc.want)
			}
			if s := v.Token.Source(); s != tc.source {
				t.Errorf("Source = %q, want %q", s, tc.source)
			}
			if hasWarn := len(c.Warnings()) > 0; hasWarn != tc.warn {
				t.Errorf("warnings = %q, want warning: %v", c.Warnings(), tc.warn)
			}
			assertNeverPrints(t, v, got)
		})
	}
}

// assertNeverPrints checks every way a Secret can be rendered.
func assertNeverPrints(t *testing.T, v extConfig, secret string) {
	t.Helper()
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logBuf, nil))
	logger.Info("config", "token", v.Token, "cfg", v)
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	y, err := v.Token.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	renderings := map[string]string{
		"%v":   fmt.Sprintf("%v", v),
		"%+v":  fmt.Sprintf("%+v", v),
		"%#v":  fmt.Sprintf("%#v", v),
		"%s":   fmt.Sprintf("%s", v.Token),
		"%q":   fmt.Sprintf("%q", v.Token),
		"%x":   fmt.Sprintf("%x", v.Token),
		"log":  logBuf.String(),
		"json": string(js),
		"yaml": fmt.Sprint(y),
	}
	for how, s := range renderings {
		if strings.Contains(s, secret) {
			t.Errorf("%s reveals the secret: %s", how, s)
		}
	}
	if !strings.Contains(renderings["%s"], Redacted) {
		t.Errorf("%%s = %q, want %q", renderings["%s"], Redacted)
	}
}

func TestSecretSetDataDir(t *testing.T) {
	cfgDir, dataDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "key"), []byte("k1"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfgDir, "config.yaml")
	if err := os.WriteFile(path, []byte("web:\n  token: {file: key}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, nil, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	var v extConfig
	if err := c.DecodeExtension("web", &v); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Token.Resolve(); err == nil {
		t.Fatal("resolved relative to the config dir; want failure before SetDataDir")
	}
	c.SetDataDir(dataDir)
	if got, err := v.Token.Resolve(); err != nil || got != "k1" {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
}

func TestUnsetSecret(t *testing.T) {
	var s Secret
	if s.IsSet() {
		t.Fatal("zero secret is set")
	}
	if _, err := s.Resolve(); err == nil {
		t.Fatal("zero secret resolved")
	}
}

// BenchmarkLoadTemplate measures loading the shipped config.yaml (part of
// the agent's cold start).
func BenchmarkLoadTemplate(b *testing.B) {
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, DefaultFile(), 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"REVERIE_LOG__LEVEL=debug", "HOME=/root"}
	for b.Loop() {
		c, err := Load(path, env, []string{"web"})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSecretValues(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("from-a-file-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	yaml := "models:\n  backends:\n" +
		"    a: {kind: openai, base_url: http://x/v1, api_key: {env: A_KEY}}\n" +
		"    b: {kind: openai, base_url: http://y/v1, api_key: {file: key}}\n" +
		"    c: {kind: openai, base_url: http://z/v1, api_key: {env: UNSET_KEY}}\n" +
		"    d: {kind: ollama, base_url: http://w}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, []string{"A_KEY=from-the-env-0123", "REVERIE_MODELS__BACKENDS__E__API_KEY=from-override-0123"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDataDir(dir)
	got := c.SecretValues()
	slices.Sort(got)
	want := []string{"from-a-file-0123", "from-override-0123", "from-the-env-0123"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretValues = %q, want %q (unresolvable and unset secrets skipped)", got, want)
	}
}

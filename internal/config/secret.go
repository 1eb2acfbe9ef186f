package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/reverie-ai/reverie/extension"
)

// Redacted is what a Secret prints as, everywhere.
const Redacted = "[secret]"

// Secret is a credential in the configuration. In YAML it is written as
//
//	token: {env: TELEGRAM_TOKEN}      # read from an environment variable
//	token: {file: secrets/telegram}   # read from a file (relative to the data dir), trimmed
//	token: "123:abc"                  # inline: allowed, but Validate warns
//
// and an environment override (REVERIE_TELEGRAM__TOKEN=…) sets it directly.
// A Secret never reveals its value when printed, logged or marshalled: the
// value is only available from Resolve. The zero Secret is "not set".
type Secret struct {
	kind   secretKind
	value  string // the literal, the variable name or the file path
	origin string // the environment variable that set a literal, if any
	ctx    *secretContext
}

type secretKind uint8

const (
	secretUnset secretKind = iota
	secretLiteral
	secretEnv
	secretFile
)

// secretContext is where secrets resolve: the environment given to Load and
// the data dir for relative files. It is shared by every Secret one Load
// decoded, so SetDataDir reaches them all.
type secretContext struct {
	env map[string]string

	mu   sync.RWMutex
	base string
}

func newSecretContext(env []string, base string) *secretContext {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return &secretContext{env: m, base: base}
}

func (c *secretContext) setBase(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = dir
}

func (c *secretContext) baseDir() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.base
}

// LiteralSecret returns a Secret holding value itself.
func LiteralSecret(value string) Secret { return Secret{kind: secretLiteral, value: value} }

// EnvSecret returns a Secret read from the process environment variable name.
func EnvSecret(name string) Secret { return Secret{kind: secretEnv, value: name} }

// IsSet reports whether the secret was configured at all.
func (s Secret) IsSet() bool { return s.kind != secretUnset }

// Source says where the value comes from without revealing it: "", "inline",
// "environment variable NAME" or "file PATH".
func (s Secret) Source() string {
	switch s.kind {
	case secretLiteral:
		if s.origin != "" {
			return "environment variable " + s.origin
		}
		return "inline"
	case secretEnv:
		return "environment variable " + s.value
	case secretFile:
		return "file " + s.value
	}
	return ""
}

// Resolve returns the secret's value. A missing variable or file, or an
// empty value, is an error (which never contains the value).
func (s Secret) Resolve() (string, error) {
	switch s.kind {
	case secretLiteral:
		if s.value == "" {
			return "", errors.New("secret is empty")
		}
		return s.value, nil
	case secretEnv:
		var v string
		var ok bool
		if s.ctx != nil {
			v, ok = s.ctx.env[s.value]
		} else {
			v, ok = os.LookupEnv(s.value)
		}
		if !ok {
			return "", fmt.Errorf("secret: environment variable %s is not set", s.value)
		}
		if v = strings.TrimSpace(v); v == "" {
			return "", fmt.Errorf("secret: environment variable %s is empty", s.value)
		}
		return v, nil
	case secretFile:
		path := s.value
		if !filepath.IsAbs(path) && s.ctx != nil {
			if base := s.ctx.baseDir(); base != "" {
				path = filepath.Join(base, path)
			}
		}
		v, err := extension.ReadSecretFile(path)
		if err != nil {
			return "", fmt.Errorf("secret: %w", err)
		}
		if v == "" {
			return "", fmt.Errorf("secret: %s is empty", path)
		}
		return v, nil
	}
	return "", errors.New("secret is not set")
}

// String never reveals the value.
func (s Secret) String() string { return Redacted }

// GoString never reveals the value.
func (s Secret) GoString() string { return "config.Secret(" + Redacted + ")" }

// Format makes every fmt verb print Redacted.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) }

// LogValue never reveals the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalYAML never reveals the value.
func (s Secret) MarshalYAML() (any, error) { return Redacted, nil }

// MarshalJSON never reveals the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText never reveals the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// decodeSecret decodes the three YAML forms of a Secret.
func (d *decoder) decodeSecret(n ast.Node, v reflect.Value, path string) error {
	if text, ok := scalarText(n); ok {
		if d.warn != nil && d.envVar == "" {
			d.warn("%s:%d: %s is written inline; prefer {env: NAME} or {file: path} so the secret stays out of the config file",
				d.file, lineOf(n), path)
		}
		v.Set(reflect.ValueOf(Secret{kind: secretLiteral, value: text, ctx: d.secrets, origin: d.envVar}))
		return nil
	}
	entries, ok := mappingEntries(n)
	if !ok || len(entries) != 1 {
		return d.errf(n, path, "%s: a secret is {env: NAME}, {file: path} or a string, got %s", path, describe(n))
	}
	key, err := d.keyString(entries[0])
	if err != nil {
		return err
	}
	val, err := d.resolve(entries[0].Value)
	if err != nil {
		return err
	}
	text, ok := scalarText(val)
	if !ok || strings.TrimSpace(text) == "" {
		return d.errf(val, join(path, key), "%s.%s: expected a name, got %s", path, key, describe(val))
	}
	switch key {
	case "env":
		v.Set(reflect.ValueOf(Secret{kind: secretEnv, value: text, ctx: d.secrets}))
	case "file":
		v.Set(reflect.ValueOf(Secret{kind: secretFile, value: text, ctx: d.secrets}))
	default:
		return d.errAt(lineOf(entries[0].Key), join(path, key), "unknown key %q: a secret is {env: NAME} or {file: path}", join(path, key))
	}
	return nil
}

// SecretValues resolves every Secret set in the core configuration (every
// field of type Secret, at any depth: models.backends.*.api_key, …) and
// returns the values, for the composition root's redaction set
// (internal/redact). Secrets that do not resolve are skipped: using them
// fails anyway, with its own error. Extensions' secrets are not here: they
// register theirs through extension.Host.RegisterSecret.
func (c *Config) SecretValues() []string {
	var out []string
	collectSecrets(reflect.ValueOf(c).Elem(), &out)
	return out
}

func collectSecrets(v reflect.Value, out *[]string) {
	if v.Type() == secretType {
		s := v.Interface().(Secret)
		if val, err := s.Resolve(); err == nil {
			*out = append(*out, val)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collectSecrets(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				collectSecrets(v.Field(i), out)
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			collectSecrets(it.Value(), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			collectSecrets(v.Index(i), out)
		}
	}
}

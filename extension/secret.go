package extension

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// MaxSecretFileBytes bounds a secret read from a file.
const MaxSecretFileBytes = 64 << 10

// Secret is a credential in an extension's configuration section, written
// like every secret in config.yaml:
//
//	token: {env: NAME}        # from an environment variable
//	token: {file: path}       # from a file (relative to the data dir), trimmed
//	token: "inline"           # allowed; prefer the other two
//
// An environment override (REVERIE_WEB__TOKEN=…, REVERIE_TELEGRAM__TOKEN=…)
// sets it inline. It never prints, logs or marshals its value: only Resolve
// returns it.
type Secret struct {
	literal, env, file string
}

// LiteralSecret returns a Secret holding value itself (tests, defaults).
func LiteralSecret(value string) Secret { return Secret{literal: value} }

// UnmarshalYAML accepts the three forms above.
func (s *Secret) UnmarshalYAML(unmarshal func(any) error) error {
	var text string
	if err := unmarshal(&text); err == nil {
		*s = Secret{literal: text}
		return nil
	}
	var m map[string]string
	if err := unmarshal(&m); err == nil && len(m) == 1 {
		for k, name := range m {
			if strings.TrimSpace(name) == "" {
				break
			}
			switch k {
			case "env":
				*s = Secret{env: name}
				return nil
			case "file":
				*s = Secret{file: name}
				return nil
			}
		}
	}
	return errors.New("a secret is {env: NAME}, {file: path} or a string")
}

// UnmarshalText sets the secret inline.
func (s *Secret) UnmarshalText(b []byte) error {
	*s = Secret{literal: string(b)}
	return nil
}

// IsSet reports whether the secret was configured.
func (s Secret) IsSet() bool { return s.literal != "" || s.env != "" || s.file != "" }

// Source says where the value comes from without revealing it: "",
// "inline", "environment variable NAME" or "file PATH".
func (s Secret) Source() string {
	switch {
	case s.literal != "":
		return "inline"
	case s.env != "":
		return "environment variable " + s.env
	case s.file != "":
		return "file " + s.file
	}
	return ""
}

// String never reveals the value.
func (s Secret) String() string { return "[secret]" }

// Format makes every fmt verb print [secret].
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "[secret]") }

// LogValue never reveals the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue("[secret]") }

// MarshalJSON never reveals the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[secret]"`), nil }

// Resolve returns the value; relative files are read from dataDir. A
// missing variable or file, or an empty value, is an error that never
// contains the value.
func (s Secret) Resolve(dataDir string) (string, error) {
	switch {
	case s.literal != "":
		return strings.TrimSpace(s.literal), nil
	case s.env != "":
		v := strings.TrimSpace(os.Getenv(s.env))
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set or empty", s.env)
		}
		return v, nil
	case s.file != "":
		path := s.file
		if !filepath.IsAbs(path) {
			path = filepath.Join(dataDir, path)
		}
		v, err := ReadSecretFile(path)
		if err != nil {
			return "", err
		}
		if v == "" {
			return "", fmt.Errorf("%s is empty", path)
		}
		return v, nil
	}
	return "", errors.New("not set")
}

// ReadSecretFile reads a secret kept in a file, trimmed of surrounding
// white space; files over MaxSecretFileBytes are refused.
func ReadSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxSecretFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, MaxSecretFileBytes)
	}
	return strings.TrimSpace(string(data)), nil
}

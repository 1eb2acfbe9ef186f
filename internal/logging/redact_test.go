package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/redact"
)

// lazyCreds is a LogValuer that renders as a group holding a token.
type lazyCreds struct{ user, token string }

func (c lazyCreds) LogValue() slog.Value {
	return slog.GroupValue(slog.String("user", c.user), slog.String("token", c.token))
}

// explodingValuer fails the test if it is ever resolved.
type explodingValuer struct{ t *testing.T }

func (e explodingValuer) LogValue() slog.Value {
	e.t.Error("a LogValuer under a sensitive key was resolved")
	return slog.StringValue("resolved")
}

func TestRedaction(t *testing.T) {
	tests := []struct {
		name string
		log  func(t *testing.T, l *slog.Logger)
		want string // text handler output without time and level
	}{
		{
			name: "plain keys kept",
			log:  func(_ *testing.T, l *slog.Logger) { l.Info("m", "thread", "web:1", "model", "gpt") },
			want: `msg=m thread=web:1 model=gpt`,
		},
		{
			name: "sensitive keys in any case",
			log: func(_ *testing.T, l *slog.Logger) {
				l.Info("m", "api_key", "a", "Authorization", "Bearer b", "accessToken", "c",
					"DB_PASSWORD", "d", "clientSecret", "e", "session_cookie", "f")
			},
			want: `msg=m api_key=[redacted] Authorization=[redacted] accessToken=[redacted] DB_PASSWORD=[redacted] clientSecret=[redacted] session_cookie=[redacted]`,
		},
		{
			name: "numeric counts under sensitive words kept",
			log: func(_ *testing.T, l *slog.Logger) {
				l.Info("m", "input_tokens", 120, "max_tokens", uint64(4096), "token_ttl", time.Minute, "has_key", true)
			},
			want: `msg=m input_tokens=120 max_tokens=4096 token_ttl=1m0s has_key=true`,
		},
		{
			name: "nested group",
			log: func(_ *testing.T, l *slog.Logger) {
				l.Info("m", slog.Group("provider", slog.String("name", "openai"), slog.String("api_key", "sk")))
			},
			want: `msg=m provider.name=openai provider.api_key=[redacted]`,
		},
		{
			name: "group under sensitive key replaced whole",
			log: func(_ *testing.T, l *slog.Logger) {
				l.Info("m", slog.Group("credentials", slog.String("user", "u"), slog.String("pw", "p")))
			},
			want: `msg=m credentials=[redacted]`,
		},
		{
			name: "LogValuer resolved then redacted inside",
			log: func(_ *testing.T, l *slog.Logger) {
				l.Info("m", "login", lazyCreds{user: "ana", token: "t0k"})
			},
			want: `msg=m login.user=ana login.token=[redacted]`,
		},
		{
			name: "LogValuer under sensitive key not resolved",
			log: func(t *testing.T, l *slog.Logger) {
				l.Info("m", "secret", explodingValuer{t})
			},
			want: `msg=m secret=[redacted]`,
		},
		{
			name: "With attributes",
			log: func(_ *testing.T, l *slog.Logger) {
				l.With("bot_token", "123:abc", "chat", 7).Info("m")
			},
			want: `msg=m bot_token=[redacted] chat=7`,
		},
		{
			name: "WithGroup sensitive name redacts everything inside",
			log: func(_ *testing.T, l *slog.Logger) {
				l.WithGroup("secrets").Info("m", "openai", "sk", "anthropic", "sk2")
			},
			want: `msg=m secrets.openai=[redacted] secrets.anthropic=[redacted]`,
		},
		{
			name: "WithGroup harmless name",
			log: func(_ *testing.T, l *slog.Logger) {
				l.WithGroup("web").With("listen", "127.0.0.1:8420").Info("m", "token", "t")
			},
			want: `msg=m web.listen=127.0.0.1:8420 web.token=[redacted]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			text := slog.NewTextHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
					if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
						return slog.Attr{}
					}
					return a
				},
			})
			tt.log(t, slog.New(NewRedactingHandler(text, nil)))
			if got := strings.TrimSpace(buf.String()); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestIsSensitiveKey(t *testing.T) {
	tests := map[string]bool{
		"api_key": true, "APIKEY": true, "x-authorization": true, "refresh_token": true,
		"password": true, "passwd": true, "client_secret": true, "credentials": true,
		"thread": false, "model": false, "user": false, "text": false, "": false,
	}
	for key, want := range tests {
		if got := IsSensitiveKey(key); got != want {
			t.Errorf("IsSensitiveKey(%q) = %v, want %v", key, got, want)
		}
	}
}

const secretKey = "sk-live-0123456789abcdef"

// providerError is how an SDK error echoing the key looks.
type providerError struct{}

func (providerError) Error() string {
	return "401 Unauthorized: Incorrect API key provided: " + secretKey
}

type request struct {
	URL    string
	Header map[string]string
}

func TestSecretValuesAreRedactedEverywhere(t *testing.T) {
	secrets := &redact.Secrets{}
	secrets.Add(secretKey)
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string
	}{
		{"message", func(l *slog.Logger) { l.Info("calling with " + secretKey) }, `msg="calling with [REDACTED]"`},
		{"string attribute", func(l *slog.Logger) { l.Info("m", "url", "https://x/v1?key="+secretKey) },
			`msg=m url="https://x/v1?key=[REDACTED]"`},
		{"error attribute", func(l *slog.Logger) { l.Info("m", "err", providerError{}) },
			`msg=m err="401 Unauthorized: Incorrect API key provided: [REDACTED]"`},
		{"wrapped error", func(l *slog.Logger) { l.Info("m", "err", fmt.Errorf("role main: %w", providerError{})) },
			`msg=m err="role main: 401 Unauthorized: Incorrect API key provided: [REDACTED]"`},
		{"error without a secret is kept", func(l *slog.Logger) { l.Info("m", "err", errors.New("timeout")) }, `msg=m err=timeout`},
		{"group", func(l *slog.Logger) { l.Info("m", slog.Group("req", "body", `{"key":"`+secretKey+`"}`, "n", 3)) },
			`msg=m req.body="{\"key\":\"[REDACTED]\"}" req.n=3`},
		{"nested group", func(l *slog.Logger) {
			l.Info("m", slog.Group("a", slog.Group("b", "c", secretKey)))
		}, `msg=m a.b.c=[REDACTED]`},
		{"With attribute", func(l *slog.Logger) { l.With("endpoint", "x"+secretKey).Info("m") }, `msg=m endpoint=x[REDACTED]`},
		{"WithGroup", func(l *slog.Logger) { l.WithGroup("g").Info("m", "v", secretKey) }, `msg=m g.v=[REDACTED]`},
		{"struct value", func(l *slog.Logger) {
			l.Info("m", "req", request{URL: "https://x", Header: map[string]string{"X-Api": secretKey}})
		}, `msg=m req="{URL:https://x Header:map[X-Api:[REDACTED]]}"`},
		{"raw JSON", func(l *slog.Logger) { l.Info("m", "detail", json.RawMessage(`{"k":"`+secretKey+`"}`)) },
			`msg=m detail="{\"k\":\"[REDACTED]\"}"`},
		{"LogValuer", func(l *slog.Logger) { l.Info("m", "creds", lazyCreds{user: secretKey, token: "t"}) },
			`msg=m creds.user=[REDACTED] creds.token=[redacted]`},
		{"numbers untouched", func(l *slog.Logger) { l.Info("m", "n", 12345678901) }, `msg=m n=12345678901`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(NewRedactingHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTimeLevel}), secrets)))
			if got := strings.TrimSpace(buf.String()); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestNewRedactsSecretsOnEverySink logs a provider error holding the key
// through New, JSON format, to the console and a file.
func TestNewRedactsSecretsOnEverySink(t *testing.T) {
	secrets := &redact.Secrets{}
	var console bytes.Buffer
	file := filepath.Join(t.TempDir(), "logs", "reverie.log")
	logger, closer, err := New(Options{Format: FormatJSON, File: file, Console: &console, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	secrets.Add(secretKey) // registered after New: applies from now on
	logger.Warn("model call failed: "+secretKey, "err", providerError{}, "backend", "openai")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"console": console.String(), "file": string(data)} {
		if strings.Contains(out, secretKey) || !strings.Contains(out, "[REDACTED]") || !json.Valid(bytes.TrimSpace([]byte(out))) {
			t.Errorf("%s: %s", name, out)
		}
	}
}

func dropTimeLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
		return slog.Attr{}
	}
	return a
}

// BenchmarkRedactingHandler is the cost of a typical log line (a failed
// model call with its error) through the JSON handler: without the handler,
// with key redaction only, and with three registered secrets.
func BenchmarkRedactingHandler(b *testing.B) {
	secrets := &redact.Secrets{}
	secrets.Add("sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyz", "3f2a9c1be4d54a7f8e6b0c2d1a9f8e7d")
	err := errors.New("openai model gpt-4.1-mini: HTTP 503: backend unavailable: 503 Service Unavailable: upstream connect error or disconnect/reset before headers")
	line := func(logger *slog.Logger) {
		logger.Warn("model call failed", "role", "main", "backend", "openai/gpt-4.1-mini", "model", "gpt-4.1-mini",
			"elapsed", "1.234s", "input_tokens", 1200, "api_key", "sk", "err", err)
	}
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{
		{"plain JSON handler", slog.NewJSONHandler(discard{}, nil)},
		{"keys only", NewRedactingHandler(slog.NewJSONHandler(discard{}, nil), nil)},
		{"keys and 3 secrets", NewRedactingHandler(slog.NewJSONHandler(discard{}, nil), secrets)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			logger := slog.New(bc.h)
			b.ReportAllocs()
			for b.Loop() {
				line(logger)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

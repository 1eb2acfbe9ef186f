package logging

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
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
			name: "Secret type under harmless key",
			log: func(_ *testing.T, l *slog.Logger) {
				l.Info("m", "value", Secret("hunter2"), "printed", fmt.Sprintf("%v|%s|%#v", Secret("x"), Secret("y"), Secret("z")))
			},
			want: `msg=m value=[redacted] printed=[redacted]|[redacted]|[redacted]`,
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
			tt.log(t, slog.New(NewRedactingHandler(text)))
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

func BenchmarkRedactingHandler(b *testing.B) {
	logger := slog.New(NewRedactingHandler(slog.NewJSONHandler(discard{}, nil)))
	b.ReportAllocs()
	for b.Loop() {
		logger.Info("turn finished", "thread", "web:abc", "input_tokens", 1200, "api_key", "sk", "duration", time.Millisecond)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

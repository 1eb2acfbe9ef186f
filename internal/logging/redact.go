package logging

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/reverie-ai/reverie/internal/redact"
)

// Redacted is what a redacted attribute's value is replaced with.
const Redacted = "[redacted]"

// sensitiveWords are matched case-insensitively anywhere in an attribute key
// ("api_key", "accessToken", "X-Authorization", "db_password", "clientSecret").
var sensitiveWords = []string{
	"token", "key", "secret", "password", "passwd", "passphrase",
	"authorization", "cookie", "credential",
}

// IsSensitiveKey reports whether an attribute or group with this key has its
// value redacted: the key contains token, key, secret, password, passwd,
// passphrase, authorization, cookie or credential, in any letter case.
func IsSensitiveKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range sensitiveWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// NewRedactingHandler wraps next so that attributes whose key is sensitive
// (see IsSensitiveKey) reach it with the value "[redacted]", and every
// registered secret value (secrets; nil for none) is replaced by
// redact.Marker wherever it appears.
//
// Rules by key:
//   - The value of a sensitive key is replaced without being resolved, so a
//     slog.LogValuer under such a key is never asked for its value.
//   - Numbers, booleans, durations and times under a sensitive key are kept:
//     they are counts and limits ("input_tokens", "max_tokens", "key_count"),
//     not credentials.
//   - Other values are resolved (slog.LogValuer is respected, so a type can
//     render itself, or redact itself as Secret does) and groups are walked
//     recursively; a group under a sensitive key is replaced as a whole.
//   - Attributes added with Logger.With are redacted once, when added, and
//     everything under Logger.WithGroup(name) with a sensitive name is
//     redacted.
//
// Rules by value, whatever the key: the message, every string, every error
// (logged as its redacted text when it holds a secret), every other value
// as the text handler would print it, at any depth of groups. A value that
// holds no secret reaches next unchanged. Secrets registered after an
// attribute was added with Logger.With are not removed from it.
func NewRedactingHandler(next slog.Handler, secrets *redact.Secrets) slog.Handler {
	return &redactingHandler{next: next, secrets: secrets}
}

type redactingHandler struct {
	next    slog.Handler
	secrets *redact.Secrets
	// all is set under a group whose name is sensitive: every attribute is
	// redacted.
	all bool
}

func (h *redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.redactAttr(a, h.all))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.redactAttr(a, h.all)
	}
	return &redactingHandler{next: h.next.WithAttrs(red), secrets: h.secrets, all: h.all}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &redactingHandler{next: h.next.WithGroup(name), secrets: h.secrets, all: h.all || IsSensitiveKey(name)}
}

func (h *redactingHandler) redactAttr(a slog.Attr, all bool) slog.Attr {
	if all || IsSensitiveKey(a.Key) {
		if harmlessKind(a.Value.Kind()) {
			return a
		}
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		red := make([]slog.Attr, len(group))
		for i, g := range group {
			red[i] = h.redactAttr(g, false)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindString:
		return slog.String(a.Key, h.secrets.Redact(v.String()))
	case slog.KindAny:
		if h.secrets.Len() > 0 {
			if s, ok := h.redactAny(v.Any()); ok {
				return slog.String(a.Key, s)
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactAny renders x as the handlers would and reports whether that text
// holds a secret (with the redacted text).
func (h *redactingHandler) redactAny(x any) (string, bool) {
	var text string
	switch x := x.(type) {
	case nil:
		return "", false
	case error:
		text = x.Error()
	case json.RawMessage:
		text = string(x)
	case []byte:
		text = string(x)
	case fmt.Stringer:
		text = x.String()
	default:
		text = fmt.Sprintf("%+v", x)
	}
	red := h.secrets.Redact(text)
	return red, red != text
}

func harmlessKind(k slog.Kind) bool {
	switch k {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		return true
	}
	return false
}

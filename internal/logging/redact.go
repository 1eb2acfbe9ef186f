package logging

import (
	"context"
	"log/slog"
	"strings"
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

// Secret is a string that always logs as "[redacted]", whatever the key it is
// logged under, and also prints as "[redacted]" through fmt. Convert it back
// with string(s) where the real value is needed.
type Secret string

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// String implements fmt.Stringer so that %v and %s do not leak the value.
func (Secret) String() string { return Redacted }

// GoString implements fmt.GoStringer so that %#v does not leak the value.
func (Secret) GoString() string { return Redacted }

// NewRedactingHandler wraps next so that attributes whose key is sensitive
// (see IsSensitiveKey) reach it with the value "[redacted]".
//
// Rules:
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
// The log message itself is not inspected: put variable data in attributes.
func NewRedactingHandler(next slog.Handler) slog.Handler {
	return &redactingHandler{next: next}
}

type redactingHandler struct {
	next slog.Handler
	// all is set under a group whose name is sensitive: every attribute is
	// redacted.
	all bool
}

func (h *redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, h.all))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a, h.all)
	}
	return &redactingHandler{next: h.next.WithAttrs(red), all: h.all}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &redactingHandler{next: h.next.WithGroup(name), all: h.all || IsSensitiveKey(name)}
}

func redactAttr(a slog.Attr, all bool) slog.Attr {
	if all || IsSensitiveKey(a.Key) {
		if harmlessKind(a.Value.Kind()) {
			return a
		}
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	if v.Kind() != slog.KindGroup {
		return slog.Attr{Key: a.Key, Value: v}
	}
	group := v.Group()
	red := make([]slog.Attr, len(group))
	for i, g := range group {
		red[i] = redactAttr(g, false)
	}
	return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
}

func harmlessKind(k slog.Kind) bool {
	switch k {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		return true
	}
	return false
}

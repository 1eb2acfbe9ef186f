// Package redact removes known secret values — model API keys, the web
// access token, the secrets of channels and MCP servers — from text before
// it is logged, stored or sent.
//
// Redaction by attribute name (logging's "api_key" rule, config.Secret's
// printing) cannot catch a secret that arrives inside free text: a provider
// error that echoes the Authorization header, a URL with a token in its
// query. Secrets is the other half: the set of the values themselves, built
// by the composition root (internal/app) from every secret in the
// configuration and added to by extensions (extension.Host.RegisterSecret),
// and applied at the few places text leaves the process: the log handler,
// the event bus, the interaction log, the model router's errors, the
// agent's error reply and the web extension's error bodies.
//
// Every occurrence of a registered value is replaced by Marker, in these
// forms: as is, JSON-escaped (inside a JSON string), URL-encoded (query and
// path escaping) and base64 (standard and URL alphabets, at each of the
// three alignments a value can have inside a longer encoded text, such as
// an HTTP Basic credential "user:secret"). Values shorter than MinLen bytes
// are not registered: a short value would match ordinary words and numbers
// (a false positive that mangles logs) and is not a credential worth the
// name. Overlapping matches (two secrets sharing text) become one Marker.
//
// The zero Secrets is empty and ready to use; a nil *Secrets redacts
// nothing. All methods are safe for concurrent use: readers never lock (the
// set of forms is an immutable snapshot swapped atomically on Add).
package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Marker replaces every occurrence of a secret. It is the
// extension.RedactedSecret extensions are told about.
const Marker = "[REDACTED]"

// MinLen is the shortest value, in bytes, that Add registers; shorter values
// are ignored (see the package documentation).
const MinLen = 8

// Secrets is a set of secret values and the forms they are searched in.
type Secrets struct {
	mu     sync.Mutex
	values map[string]struct{}
	index  atomic.Pointer[index] // nil until a value is added
}

// index is an immutable search structure over every form of every value.
// Every form is at least minForm bytes long, so every occurrence covers
// step = minForm-MinLen+1 consecutive positions at which one of the form's
// first step MinLen-byte windows starts: probing the text every step bytes
// is enough to meet each occurrence once. A probe is one 64-bit load hashed
// into a 65,536-bit filter; only on a hit are the windows' forms compared.
// With API keys and tokens (30 to 100 bytes) a probe every 20 or more bytes
// makes a clean text cost a few nanoseconds per hundred bytes, whatever the
// number of secrets.
type index struct {
	step   int
	byHead map[uint64][]window // form windows by their MinLen bytes
	filter [1 << 10]uint64     // bit headHash(h) set for every key h of byHead
}

// window is the MinLen bytes of form starting at off.
type window struct {
	form string
	off  int
}

func headHash(head uint64) uint64 { return (head * 0x9E3779B97F4A7C15) >> 48 }

// head is the little-endian 64-bit value of s[i:i+MinLen].
func head(s string, i int) uint64 {
	s = s[i : i+MinLen]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Add registers values (empty and short ones are ignored). Text redacted
// from now on has them replaced; text already logged or stored is not
// rewritten, so register secrets before they can be used. Add on a nil
// *Secrets does nothing.
func (s *Secrets) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		if _, ok := s.values[v]; ok {
			continue
		}
		if s.values == nil {
			s.values = map[string]struct{}{}
		}
		s.values[v] = struct{}{}
		changed = true
	}
	if !changed {
		return
	}
	seen := map[string]bool{}
	var forms []string
	minForm := 0
	for v := range s.values {
		for _, f := range formsOf(v) {
			if len(f) >= MinLen && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
				if minForm == 0 || len(f) < minForm {
					minForm = len(f)
				}
			}
		}
	}
	ix := &index{step: minForm - MinLen + 1, byHead: map[uint64][]window{}}
	for _, f := range forms {
		for off := range ix.step {
			h := head(f, off)
			ix.byHead[h] = append(ix.byHead[h], window{f, off})
			hh := headHash(h)
			ix.filter[hh>>6] |= 1 << (hh & 63)
		}
	}
	s.index.Store(ix)
}

// Len is the number of secret values registered.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// formsOf lists the forms v is searched in.
func formsOf(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	if b, err := json.Marshal(v); err == nil { // HTML-safe escaping, as encoding/json writes by default
		out = append(out, string(b[1:len(b)-1]))
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := strings.TrimSuffix(sb.String(), "\n")
		out = append(out, j[1:len(j)-1])
	}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := range 3 {
			out = append(out, base64Core(e, v, k))
		}
	}
	return out
}

// base64Core is the part of the base64 encoding of v that does not depend on
// what surrounds it when v starts k bytes (mod 3) into the encoded data:
// the characters of the 3-byte groups holding only bytes of v.
func base64Core(e *base64.Encoding, v string, k int) string {
	// Encode k placeholder bytes then v; drop the characters that carry
	// bits of the placeholders and those of a final partial group.
	buf := make([]byte, k+len(v))
	copy(buf[k:], v)
	full := (len(buf) / 3) * 4
	enc := e.EncodeToString(buf)[:full]
	skip := [3]int{0, 2, 3}[k]
	if skip >= len(enc) {
		return ""
	}
	return enc[skip:]
}

// span is a match [start, end) in the text.
type span struct{ start, end int }

// find returns the merged matches of every form in text, in order, or nil.
func (s *Secrets) find(text string) []span {
	if s == nil || len(text) < MinLen {
		return nil
	}
	ix := s.index.Load()
	if ix == nil {
		return nil
	}
	var spans []span
	for p := 0; p+MinLen <= len(text); p += ix.step {
		h := head(text, p)
		hh := headHash(h)
		if ix.filter[hh>>6]&(1<<(hh&63)) == 0 {
			continue
		}
		for _, w := range ix.byHead[h] {
			start := p - w.off
			if start >= 0 && strings.HasPrefix(text[start:], w.form) {
				spans = append(spans, span{start, start + len(w.form)})
			}
		}
	}
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end { // overlapping or touching: one marker
			last.end = max(last.end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// replace builds text with every span replaced by Marker.
func replace(text string, spans []span) []byte {
	n := len(text)
	for _, sp := range spans {
		n += len(Marker) - (sp.end - sp.start)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, sp := range spans {
		out = append(out, text[prev:sp.start]...)
		out = append(out, Marker...)
		prev = sp.end
	}
	return append(out, text[prev:]...)
}

// Redact returns text with every registered secret replaced by Marker. It
// returns text itself, without allocating, when there is nothing to
// replace.
func (s *Secrets) Redact(text string) string {
	spans := s.find(text)
	if spans == nil {
		return text
	}
	b := replace(text, spans)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// RedactBytes is Redact for a byte slice. It returns b itself when there is
// nothing to replace, else a new slice (b is never modified).
func (s *Secrets) RedactBytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	text := unsafe.String(unsafe.SliceData(b), len(b)) // read only, not kept
	spans := s.find(text)
	if spans == nil {
		return b
	}
	return replace(text, spans)
}

// RedactJSON redacts a JSON document and keeps it valid: a replacement that
// would break it (a secret written as a bare number, say) turns the whole
// redacted text into one JSON string. b is returned itself when there is
// nothing to replace.
func (s *Secrets) RedactJSON(b []byte) []byte {
	out := s.RedactBytes(b)
	if len(out) == len(b) && (len(b) == 0 || &out[0] == &b[0]) {
		return b
	}
	if json.Valid(out) {
		return out
	}
	quoted, _ := json.Marshal(string(out))
	return quoted
}

// RedactError returns err when its text holds no secret, else an error whose
// Error() is the redacted text and that wraps err, so errors.Is still finds
// the sentinels it wraps. (Error texts reached by unwrapping, with
// errors.As or errors.Unwrap, are the originals: print the returned error.)
func (s *Secrets) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := s.Redact(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

package redact

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const key = "sk-proj-Abc123+/xyz=Q9"

func TestRedact(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + key))
	jsonQuoted, _ := json.Marshal("token " + key + " <end>")
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"empty registry", nil, "Authorization: Bearer " + key, "Authorization: Bearer " + key},
		{"plain", []string{key}, "401: Incorrect API key provided: " + key + ".", "401: Incorrect API key provided: [REDACTED]."},
		{"every occurrence", []string{key}, key + " and " + key, "[REDACTED] and [REDACTED]"},
		{"whole text", []string{key}, key, "[REDACTED]"},
		{"query escaped", []string{key}, "GET /v1?key=" + url.QueryEscape(key) + "&x=1", "GET /v1?key=[REDACTED]&x=1"},
		{"path escaped", []string{key}, "GET /v1/" + url.PathEscape(key) + "/models", "GET /v1/[REDACTED]/models"},
		{"JSON escaped", []string{`pa"ss\word<>&12`}, `{"error":"bad ` + jsonEscape(`pa"ss\word<>&12`) + `"}`, `{"error":"bad [REDACTED]"}`},
		{"JSON escaped without HTML escaping", []string{`pass<word>&1`}, `{"e":"pass<word>&1"}`, `{"e":"[REDACTED]"}`},
		{"whole JSON string", []string{key}, string(jsonQuoted), `"token [REDACTED] \u003cend\u003e"`},
		{"base64 in basic auth", []string{key}, "Authorization: Basic " + basic, "Authorization: Basic " + basicRedacted(basic)},
		{"overlapping secrets", []string{"abcdefgh1234", "gh12345678zz"}, "x abcdefgh12345678zz y", "x [REDACTED] y"},
		{"one secret inside another", []string{"secretvalue1", "secretvalue123456"}, "a secretvalue123456 b secretvalue1 c", "a [REDACTED] b [REDACTED] c"},
		{"adjacent secrets", []string{"aaaaaaaaaa", "bbbbbbbbbb"}, "aaaaaaaaaabbbbbbbbbb", "[REDACTED]"},
		{"short value ignored", []string{"hunter2"}, "password hunter2", "password hunter2"},
		{"empty value ignored", []string{""}, "nothing here at all", "nothing here at all"},
		{"text shorter than any secret", []string{key}, "sk-", "sk-"},
		{"no match", []string{key}, "a perfectly ordinary log line", "a perfectly ordinary log line"},
		{"unicode around", []string{key}, "é→" + key + "←ü", "é→[REDACTED]←ü"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Secrets
			s.Add(tc.secrets...)
			if got := s.Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if got := string(s.RedactBytes([]byte(tc.in))); got != tc.want {
				t.Errorf("RedactBytes(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// basicRedacted is what the base64 of "user:"+key becomes: the characters
// carrying only the key's bytes are replaced.
func basicRedacted(enc string) string {
	// "user:" is 5 bytes: the key starts 2 bytes into a group, so its core
	// starts after 3 characters of that group: 4 + 3 = 7 characters kept.
	return enc[:7] + Marker + enc[7+len(base64Core(base64.StdEncoding, key, 2)):]
}

func TestUnchangedTextIsNotCopied(t *testing.T) {
	var s Secrets
	s.Add(key)
	in := "nothing secret in this line of text"
	if got := s.Redact(in); got != in {
		t.Fatal(got)
	}
	b := []byte(in)
	if got := s.RedactBytes(b); &got[0] != &b[0] {
		t.Error("RedactBytes copied a text without secrets")
	}
	if got := s.RedactJSON([]byte(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Error(string(got))
	}
	if n := testing.AllocsPerRun(100, func() { s.Redact(in) }); n != 0 {
		t.Errorf("Redact of a clean text allocates %v times", n)
	}
}

func TestNilSecrets(t *testing.T) {
	var s *Secrets
	s.Add(key)
	if s.Len() != 0 || s.Redact(key) != key || string(s.RedactBytes([]byte(key))) != key {
		t.Fatal("a nil *Secrets redacted something")
	}
	err := errors.New(key)
	if s.RedactError(err) != err {
		t.Fatal("a nil *Secrets wrapped an error")
	}
}

func TestRedactJSONStaysValid(t *testing.T) {
	var s Secrets
	s.Add("1234567890123", key)
	tests := []struct {
		name, in, want string
	}{
		{"in a string", `{"error":"bad key ` + key + `"}`, `{"error":"bad key [REDACTED]"}`},
		{"a bare number becomes a string", `{"pin":1234567890123}`, `"{\"pin\":[REDACTED]}"`},
		{"nothing to do", `{"ok":true}`, `{"ok":true}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := s.RedactJSON([]byte(tc.in))
			if string(got) != tc.want || !json.Valid(got) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

var errSentinel = errors.New("authentication failed")

func TestRedactError(t *testing.T) {
	var s Secrets
	s.Add(key)
	orig := fmt.Errorf("openai: HTTP 401: %w: Incorrect API key provided: %s", errSentinel, key)
	err := s.RedactError(orig)
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "Incorrect API key provided: [REDACTED]") {
		t.Fatalf("Error() = %q", err)
	}
	if !errors.Is(err, errSentinel) {
		t.Error("the redacted error lost its sentinel")
	}
	wrapped := fmt.Errorf("turn: %w", err)
	if strings.Contains(wrapped.Error(), key) {
		t.Errorf("wrapping brought the key back: %q", wrapped)
	}
	if again := s.RedactError(err); again != err {
		t.Error("an already redacted error was wrapped again")
	}
	clean := errors.New("timeout")
	if s.RedactError(clean) != clean || s.RedactError(nil) != nil {
		t.Error("an error without secrets was wrapped")
	}
}

func TestAddIgnoresDuplicatesAndShortValues(t *testing.T) {
	var s Secrets
	s.Add(key, key, "short", "")
	if s.Len() != 1 {
		t.Fatalf("Len = %d, want 1", s.Len())
	}
}

func TestConcurrentAddAndRedact(t *testing.T) {
	var s Secrets
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v := fmt.Sprintf("secret-value-%02d", i)
			s.Add(v)
			if got := s.Redact("x " + v + " y"); got != "x [REDACTED] y" {
				t.Errorf("%s: %q", v, got)
			}
		})
	}
	wg.Wait()
	if s.Len() != 8 {
		t.Fatalf("Len = %d", s.Len())
	}
}

// A log line's worth of text with three registered secrets (about 30
// searched forms): the cost the log handler pays per string value.
func BenchmarkRedact(b *testing.B) {
	var s Secrets
	s.Add("sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyz", "3f2a9c1be4d54a7f8e6b0c2d1a9f8e7d")
	clean := `model call failed role=main backend=openai/gpt-4.1-mini model=gpt-4.1-mini elapsed=1.234s err="openai model gpt-4.1-mini: HTTP 503: backend unavailable: Service Unavailable"`
	dirty := strings.Replace(clean, "Service Unavailable", "Incorrect API key provided: sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", 1)
	b.Run("clean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Redact(clean)
		}
	})
	b.Run("with a secret", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Redact(dirty)
		}
	})
	b.Run("empty registry", func(b *testing.B) {
		var empty Secrets
		b.ReportAllocs()
		for b.Loop() {
			empty.Redact(clean)
		}
	})
}

// TestEveryOffsetAndLength checks the strided scan against strings.ReplaceAll
// for every secret length and position, with a short and a long secret
// registered together (the short one sets the stride).
func TestEveryOffsetAndLength(t *testing.T) {
	const filler = "the quick brown fox jumps over the lazy dog 0123456789 "
	for n := MinLen; n <= 48; n++ {
		secret := strings.Repeat("Zq7", 20)[:n]
		long := "LONG-" + strings.Repeat("k9", 30)
		var s Secrets
		s.Add(secret, long)
		for off := 0; off <= len(filler); off++ {
			text := filler[:off] + secret + filler[off:] + " " + long
			want := strings.ReplaceAll(strings.ReplaceAll(text, long, Marker), secret, Marker)
			if got := s.Redact(text); got != want {
				t.Fatalf("len %d at %d:\n got %q\nwant %q", n, off, got, want)
			}
		}
	}
}

// FuzzRedact: any text, any secret: no panic, a text without the secret
// comes back unchanged (or differs only where an encoded form matched),
// and a secret without brackets never survives in the output.
func FuzzRedact(f *testing.F) {
	f.Add("sk-proj-0123456789", "Authorization: Bearer ", " rest")
	f.Add("p@ss w/rd+=&?12", `{"e":"`, `"}`)
	f.Add("12345678", "", "")
	f.Add("ünïcödé-secret", "\xff\xfe", "\x00")
	f.Fuzz(func(t *testing.T, secret, prefix, suffix string) {
		var s Secrets
		s.Add(secret)
		text := prefix + secret + suffix
		got := s.Redact(text)
		if len(secret) < MinLen {
			if got != text {
				t.Fatalf("a short secret changed the text: %q → %q", text, got)
			}
			return
		}
		if !strings.ContainsAny(secret, "[]") && strings.Contains(got, secret) {
			t.Fatalf("secret %q survived: %q → %q", secret, text, got)
		}
		if clean := prefix + suffix; !strings.Contains(clean, secret) {
			_ = s.Redact(clean) // must not panic
		}
		if b := s.RedactJSON([]byte(text)); json.Valid([]byte(text)) && !json.Valid(b) {
			t.Fatalf("RedactJSON broke valid JSON: %q → %q", text, b)
		}
	})
}

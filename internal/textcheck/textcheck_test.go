package textcheck

import (
	"regexp"
	"testing"
)

func TestLooksSecret(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"plain sentence", "The user prefers tea over coffee in the morning.", ""},
		{"long word without digits", "Pneumonoultramicroscopicsilicovolcanoconiosis is a word.", ""},
		{"hex digest (under 4 bits a character)", "deadbeefdeadbeefdeadbeefdeadbeef00", ""},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc", "private key"},
		{"openai key", "my key is sk-proj-abcdefghijklmnop1234", "OpenAI-style key"},
		{"anthropic key", "sk-ant-api03-ABCDEFGHIJKLMNOPQRST", "OpenAI-style key"},
		{"aws key", "AKIAIOSFODNN7EXAMPLE", "AWS access key"},
		{"github token", "ghp_abcdefghijklmnopqrstuvwxyz0123", "GitHub token"},
		{"slack token", "xoxb-1234567890-abcdef", "Slack token"},
		{"google key", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop", "JWT"},
		{"password assignment", "wifi password: hunter2", "password"},
		{"password is", "The API key is 12345", "password"},
		{"credentials in url", "clone https://bob:s3cret@example.com/repo.git", "credentials in URL"},
		{"high-entropy token", "token Zx9qL2mN8vB4cT7rY1wK5pH3jD6fG0sA", "high-entropy token"},
		{"key with a Kelvin sign (folded to k)", "api_\u212aey = 12345", "password"},
		{"token at the end", "see Zx9qL2mN8vB4cT7rY1wK5pH3jD6fG0sA", "high-entropy token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksSecret(tc.text); got != tc.want {
				t.Errorf("LooksSecret(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// lookSecretSlowly is LooksSecret by the expressions alone (every text run
// through each), the reference its literal hints must agree with.
func lookSecretSlowly(text string) string {
	for _, p := range secretPatterns() {
		if p.re.MatchString(text) {
			return p.name
		}
	}
	for _, tok := range regexp.MustCompile(`[A-Za-z0-9+/=_\-]{32,}`).FindAllString(text, -1) {
		if highEntropy(tok) {
			return "high-entropy token"
		}
	}
	return ""
}

func FuzzLooksSecret(f *testing.F) {
	for _, s := range []string{"wifi PASSWORD is x", "api_\u212aey: v", "pa\u017fsword=1", "sk-abcdefghijklmnopq",
		"https://a:b@c", "Zx9qL2mN8vB4cT7rY1wK5pH3jD6fG0sA", "ghp_abcdefghijklmnopqrstuvwxyz0123", "plain text"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := LooksSecret(text), lookSecretSlowly(text); got != want {
			t.Errorf("LooksSecret(%q) = %q, the expressions say %q", text, got, want)
		}
	})
}

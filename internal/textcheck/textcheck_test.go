package textcheck

import "testing"

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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksSecret(tc.text); got != tc.want {
				t.Errorf("LooksSecret(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

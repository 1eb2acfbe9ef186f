package matrix

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/extensions/matrix/matrixtest"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct{ name, md, html, body string }{
		{"plain", "just text", "", "just text"},
		{"bold and escaped", "**noted** <ok> & done", "<strong>noted</strong> &lt;ok&gt; &amp; done", "noted <ok> & done"},
		{"raw html stays text", "<script>alert(1)</script> hi", "", "<script>alert(1)</script> hi"},
		{"raw html escaped among formatting", "**b** <script>x</script>", "<strong>b</strong> &lt;script&gt;x&lt;/script&gt;", "b <script>x</script>"},
		{"html block escaped", "<div>\n<b>x</b>\n</div>\n\n*it*", "&lt;div&gt;", ""},
		{"list", "- one\n- two", "<li>one</li>", "• one\n• two"},
		{"javascript link dropped", "[x](javascript:alert(1))", `<a href="">x</a>`, ""},
		{"code", "run `a<b`", "<code>a&lt;b</code>", "run a<b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := render(tc.md)
			if tc.html == "" && c.FormattedBody != "" && tc.body != "" {
				t.Errorf("formatted_body for plain text: %q", c.FormattedBody)
			}
			if tc.html != "" && !strings.Contains(c.FormattedBody, tc.html) {
				t.Errorf("formatted_body %q lacks %q", c.FormattedBody, tc.html)
			}
			if strings.Contains(c.FormattedBody, "<script") || strings.Contains(c.FormattedBody, "javascript:") {
				t.Errorf("unsafe HTML: %q", c.FormattedBody)
			}
			if tc.body != "" && c.Body != tc.body {
				t.Errorf("body %q, want %q", c.Body, tc.body)
			}
		})
	}
}

// The conformance suite, against a real homeserver.
func TestConformance(t *testing.T) {
	srv := matrixtest.Start(t)
	bot := srv.CreateUser(t, "bot", "a-password-123")
	extensiontest.Run(t, Info(Options{}), extensiontest.WithConfig(fmt.Sprintf(
		"homeserver: %s\nuser_id: %q\npassword: a-password-123\nallowed_users: [\"@me:localhost\"]\n", srv.URL(), bot)))
}

func TestConfigCheck(t *testing.T) {
	base := "homeserver: https://matrix.example.org\nuser_id: \"@bot:example.org\"\npassword: pw-123456789\nallowed_users: [\"@me:example.org\"]\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"ok", base, ""},
		{"no homeserver", strings.Replace(base, "homeserver: https://matrix.example.org\n", "", 1), "matrix.homeserver is not set"},
		{"bad homeserver", strings.Replace(base, "https://matrix.example.org", "ftp://x", 1), "matrix.homeserver"},
		{"bad user id", strings.Replace(base, "@bot:example.org", "bot", 1), "matrix.user_id"},
		{"no credential", strings.Replace(base, "password: pw-123456789\n", "", 1), "matrix.password or matrix.access_token"},
		{"both credentials", base + "access_token: tok-123456789\n", "both set"},
		{"no allowed users", strings.Replace(base, "allowed_users: [\"@me:example.org\"]\n", "", 1), "matrix.allowed_users is empty"},
		{"bad allowed user", strings.Replace(base, "@me:example.org", "me", 1), "matrix.allowed_users"},
		{"comma-separated users", strings.Replace(base, "[\"@me:example.org\"]", "\"@me:example.org, @you:example.org\"", 1), ""},
		{"bad group mode", base + "group_mode: sometimes\n", "matrix.group_mode"},
		{"edit interval too short", base + "edit_interval: 10ms\n", "matrix.edit_interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decode := func(v any) error { return yaml.UnmarshalWithOptions([]byte(tc.yaml), v, yaml.Strict()) }
			err := New(Options{}).CheckConfig(decode)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.want != "" && !errors.Is(err, extension.ErrInvalidConfig):
				t.Fatalf("%v is not ErrInvalidConfig", err)
			}
		})
	}
}

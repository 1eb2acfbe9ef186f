package approval

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Policy says when a tool's calls need the user's approval.
type Policy string

// Policies.
const (
	// Never: calls run without asking.
	Never Policy = "never"
	// Always: every call is asked about.
	Always Policy = "always"
	// NewHosts: a call whose "url" argument names a host the user did not
	// name in their messages of the conversation.
	NewHosts Policy = "new_hosts"
	// NewHostsAfterPrivate: as NewHosts, but only once a tool that reads
	// private data has answered in the turn (the default for fetch_url).
	NewHostsAfterPrivate Policy = "new_hosts_after_private"
	// Network: every call while the shell has network access.
	Network Policy = "network"
	// OtherChannels: a call whose "channel" argument names a channel other
	// than the one the turn came from (the default for send_to_channel).
	OtherChannels Policy = "other_channels"
)

// Policies lists every policy, for validation and documentation.
var Policies = []Policy{Never, Always, NewHosts, NewHostsAfterPrivate, Network, OtherChannels}

// PolicyNames lists the policies, comma-separated, for error messages.
func PolicyNames() string {
	names := make([]string, len(Policies))
	for i, p := range Policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether p is a known policy.
func (p Policy) Valid() bool { return slices.Contains(Policies, p) }

// DefaultPolicies are the policies of tools the configuration does not
// name: send_to_channel to another channel and fetch_url of a new host after
// private data was read need approval; everything else runs.
func DefaultPolicies() map[string]Policy {
	return map[string]Policy{
		"fetch_url":       NewHostsAfterPrivate,
		"send_to_channel": OtherChannels,
		// A channel's own delivery tools name a "thread"; one other than
		// the asking conversation is another recipient.
		"telegram_send_file": OtherChannels,
		"matrix_send_file":   OtherChannels,
	}
}

// Situation is what Decide knows about a call.
type Situation struct {
	// Tool and Arguments (a JSON object) are the call.
	Tool      string
	Arguments json.RawMessage
	// Channel is the channel the turn came from ("" when unknown).
	Channel string
	// Thread is the thread the turn came from ("" when unknown).
	Thread string
	// UserHosts are the hosts the user named in their messages (see
	// HostsIn).
	UserHosts []string
	// PrivateRead is set once a tool that reads private data answered in
	// the turn.
	PrivateRead bool
	// ShellNetwork is set when the shell runs with network access.
	ShellNetwork bool
}

// Decide applies p to s: need says whether the call needs approval, and
// reason says why, in words for the user.
func Decide(p Policy, s Situation) (need bool, reason string) {
	switch p {
	case Always:
		return true, fmt.Sprintf("%s always needs your approval", s.Tool)
	case NewHosts, NewHostsAfterPrivate:
		host, ok := urlHost(s.Arguments)
		if !ok || named(host, s.UserHosts) {
			return false, ""
		}
		if p == NewHosts {
			return true, fmt.Sprintf("%s would contact %s, a host you did not mention", s.Tool, host)
		}
		if !s.PrivateRead {
			return false, ""
		}
		return true, fmt.Sprintf("%s would contact %s, a host you did not mention, after your private data was read in this turn", s.Tool, host)
	case Network:
		if s.ShellNetwork {
			return true, fmt.Sprintf("%s runs with network access", s.Tool)
		}
	case OtherChannels:
		var a struct {
			Channel string `json:"channel"`
			Thread  string `json:"thread"`
		}
		if json.Unmarshal(s.Arguments, &a) != nil {
			return false, ""
		}
		to := ""
		switch {
		case a.Channel != "" && a.Channel != s.Channel:
			to = a.Channel
		case a.Thread != "" && !sameThread(a.Thread, s.Thread):
			to = a.Thread
		}
		if to == "" {
			return false, ""
		}
		from := s.Channel
		if from == "" {
			from = "a background task"
		}
		return true, fmt.Sprintf("%s would send a message to %s, not to %s where you asked", s.Tool, to, from)
	}
	return false, ""
}

// sameThread reports whether arg, a thread as a tool argument (with or
// without its channel: "telegram:42" or "42"), is the turn's thread.
func sameThread(arg, turn string) bool {
	if turn == "" {
		return false
	}
	// The target after the channel may itself contain colons (a Matrix
	// room id, "!abc:example.org").
	_, target, ok := strings.Cut(turn, ":")
	return arg == turn || (ok && arg == target)
}

// urlHost returns the lower-case host of a call's "url" argument. A call
// without one has no host; one whose url does not parse gets the raw text,
// so it can never match a named host.
func urlHost(args json.RawMessage) (string, bool) {
	var a struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.URL) == "" {
		return "", false
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || u.Hostname() == "" {
		return strings.TrimSpace(a.URL), true
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), true
}

// named reports whether host is one of hosts or below one of them
// (docs.example.org when the user named example.org).
func named(host string, hosts []string) bool {
	for _, h := range hosts {
		if host == h || (net.ParseIP(host) == nil && strings.HasSuffix(host, "."+h)) {
			return true
		}
	}
	return false
}

// hostRE finds host names in text: in URLs, and bare names with a dot and
// a letter-only top-level label ("example.org", "docs.go.dev").
var hostRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:[a-z][a-z0-9+.-]*://)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}|\[[0-9a-f:.]+\]|\d{1,3}(?:\.\d{1,3}){3})`)
})

// HostsIn returns the lower-case host names and IP addresses named in
// text, without duplicates.
func HostsIn(text string) []string {
	var out []string
	for _, m := range hostRE().FindAllStringSubmatch(text, -1) {
		h := strings.ToLower(strings.Trim(m[1], "[]"))
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

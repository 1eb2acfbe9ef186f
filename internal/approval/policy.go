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

	"github.com/reverie-ai/reverie/tool"
)

// Policy says when a tool's calls need the user's approval.
type Policy string

// Policies.
const (
	// Never: calls run without asking.
	Never Policy = "never"
	// Always: every call is asked about.
	Always Policy = "always"
	// Untrusted is the rule (the default of every outward tool): once the
	// conversation holds untrusted input (tool.UntrustedResults, or a
	// message the user did not write), a call that can carry data out
	// (tool.SendsOut) needs approval unless each of its destinations was
	// fixed before that input arrived (see Facts).
	Untrusted Policy = "untrusted"
	// NewDestinations: a call needs approval whenever one of its
	// destinations is not fixed, untrusted input or not (the default of
	// the tools that message other conversations: send_to_channel,
	// set_reminder, and the channels' send-file tools, which declare it
	// with tool.DefaultApproval).
	NewDestinations Policy = "new_destinations"

	// The policies of earlier versions, still accepted: each is now a
	// special case of the rule (see Canonical).

	// NewHosts is NewDestinations.
	NewHosts Policy = "new_hosts"
	// NewHostsAfterPrivate is Untrusted: private data is always in the
	// conversation (memories are in every system prompt), so what counts
	// is untrusted input.
	NewHostsAfterPrivate Policy = "new_hosts_after_private"
	// Network is NewDestinations: a shell with network access can reach
	// anywhere, a destination never fixed.
	Network Policy = "network"
	// OtherChannels is NewDestinations: only the conversation the turn
	// came from is a fixed destination for a message.
	OtherChannels Policy = "other_channels"
)

// Policies lists every policy name that loads, for validation and
// documentation (the current ones first).
var Policies = []Policy{Never, Always, Untrusted, NewDestinations, NewHosts, NewHostsAfterPrivate, Network, OtherChannels}

// PolicyNames lists the current policies, comma-separated, for error
// messages.
func PolicyNames() string {
	return strings.Join([]string{string(Never), string(Always), string(Untrusted), string(NewDestinations)}, ", ")
}

// Valid reports whether p is a known policy (current or older).
func (p Policy) Valid() bool { return slices.Contains(Policies, p) }

// Canonical is the current policy an older name stands for (p itself for
// a current one).
func (p Policy) Canonical() Policy {
	switch p {
	case NewHosts, Network, OtherChannels:
		return NewDestinations
	case NewHostsAfterPrivate:
		return Untrusted
	}
	return p
}

// DefaultPolicies are the policies of the core tools the configuration
// does not name, beyond the general default (Untrusted for an outward
// tool, Never for the others; see Service.PolicyFor): the tools that
// message another conversation ask whenever it is not this one. A tool
// of an extension declares its own default instead (tool.DefaultApproval).
func DefaultPolicies() map[string]Policy {
	return map[string]Policy{
		"send_to_channel": NewDestinations,
		"set_reminder":    NewDestinations,
	}
}

// Facts are what the conversation a call was made in says about its
// destinations: what the user fixed, and what untrusted input arrived.
type Facts struct {
	// UserURLs are the URLs the user wrote in their own messages
	// (normalised, see normURL): each is a fixed destination, wherever
	// it stands in the conversation.
	UserURLs []string
	// UserHosts are the hosts the user named in their own messages
	// before the first untrusted input (all of them when there is none):
	// fixed destinations, unless untrusted input came from them.
	UserHosts []string
	// Taint names the first untrusted input ("" when there is none).
	Taint string
	// TaintHosts are the hosts untrusted input came from (the pages
	// fetched): never fixed by the user having named them, since that is
	// where an injection would have come from.
	TaintHosts []string
}

// Situation is what Decide knows about a call.
type Situation struct {
	// Tool is the tool called.
	Tool string
	// Destinations are where the call can carry data (tool.Destination).
	Destinations []tool.Destination
	// Channel is the channel the turn came from ("" when unknown or in
	// the background).
	Channel string
	// Thread is the thread the turn came from ("" when unknown).
	Thread string
	// Facts are the conversation's.
	Facts Facts
	// Redirect says the call is a further hop of a running call (a
	// redirect fetch_url follows).
	Redirect bool
}

// Decide applies p to s: need says whether the call needs approval, and
// reason says why, in words for the user: which destination, what data,
// and what made it untrusted.
func Decide(p Policy, s Situation) (need bool, reason string) {
	p = p.Canonical()
	switch p {
	case Always:
		r := fmt.Sprintf("%s always needs your approval", s.Tool)
		if len(s.Destinations) > 0 {
			r += ": " + describe(s.Tool, s.Destinations[0], s.Redirect)
		}
		return true, r
	case Untrusted, NewDestinations:
	default:
		return false, ""
	}
	i := slices.IndexFunc(s.Destinations, func(d tool.Destination) bool { return !fixed(d, s) })
	if i < 0 {
		return false, ""
	}
	d := s.Destinations[i]
	switch {
	case s.Facts.Taint != "":
		return true, fmt.Sprintf("%s, after this conversation took in content from outside (%s); that destination was not fixed before it arrived",
			describe(s.Tool, d, s.Redirect), s.Facts.Taint)
	case p == NewDestinations:
		return true, fmt.Sprintf("%s, a destination you did not name", describe(s.Tool, d, s.Redirect))
	}
	return false, ""
}

// maxShownData bounds the data quoted in a reason.
const maxShownData = 300

// describe says where d takes the call's data, and the data.
func describe(toolName string, d tool.Destination, redirect bool) string {
	data := d.Data
	if r := []rune(data); len(r) > maxShownData {
		data = string(r[:maxShownData]) + "…"
	}
	var where string
	switch {
	case d.URL != "":
		where = fmt.Sprintf("a request to %s", hostOf(d.URL))
		if redirect {
			where = fmt.Sprintf("a redirect to %s", hostOf(d.URL))
		}
	case d.Thread != "" || d.Channel != "":
		to := d.Thread
		if d.Channel != "" && d.Thread == "" {
			to = "the channel " + d.Channel
		} else if d.Channel != "" && chanOf(d.Thread) == "" {
			to = d.Channel + ":" + d.Thread
		}
		where = fmt.Sprintf("a message to %s, not the conversation you asked in", to)
	default:
		where = "data to " + d.Anywhere
	}
	return fmt.Sprintf("%s would send %s, carrying %q", toolName, where, data)
}

// fixed reports whether d was fixed before any untrusted input: a URL the
// user wrote, a host the user named (see Facts), the turn's own
// conversation. A destination that can be anywhere never is.
func fixed(d tool.Destination, s Situation) bool {
	switch {
	case d.Anywhere != "":
		return false
	case d.URL != "":
		if slices.Contains(s.Facts.UserURLs, normURL(d.URL)) {
			return true
		}
		host := hostOf(d.URL)
		return named(host, s.Facts.UserHosts) && !related(host, s.Facts.TaintHosts)
	case d.Thread != "":
		if d.Channel != "" && chanOf(d.Thread) == "" {
			// A bare target on the channel named.
			return d.Channel == s.Channel && sameThread(d.Thread, s.Thread)
		}
		if d.Channel != "" && chanOf(d.Thread) != d.Channel {
			return false
		}
		return sameThread(d.Thread, s.Thread)
	case d.Channel != "":
		return s.Channel != "" && d.Channel == s.Channel
	}
	return true
}

// chanOf is the channel part of a thread id with one ("telegram" of
// "telegram:42"), else "".
func chanOf(thread string) string {
	c, _, ok := strings.Cut(thread, ":")
	if !ok || strings.HasPrefix(thread, "!") {
		return ""
	}
	return c
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

// hostOf returns the lower-case host of a URL; one that does not parse
// gets the raw text, so it can never match a named host.
func hostOf(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Hostname() == "" {
		return strings.TrimSpace(raw)
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// normURL is raw in a form two spellings of one URL share: lower-case
// scheme and host, no trailing dot, no default port, no fragment, "/" for
// an empty path. A URL that does not parse stays as it is.
func normURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return strings.TrimSpace(raw)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	if port != "" {
		u.Host += ":" + port
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
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

// related reports whether host is one of hosts, below one or above one.
func related(host string, hosts []string) bool {
	return named(host, hosts) || slices.ContainsFunc(hosts, func(h string) bool { return named(h, []string{host}) })
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

// urlRE finds http and https URLs in text.
var urlRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(?i)https?://[^\\s<>\"'`]+")
})

// URLsIn returns the http and https URLs written in text, normalised
// (normURL), without duplicates; punctuation that ends a sentence is not
// part of a URL.
func URLsIn(text string) []string {
	var out []string
	for _, m := range urlRE().FindAllString(text, -1) {
		u := normURL(strings.TrimRight(m, ".,;:!?)]}"))
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// argsDestinations are the destinations a tool that does not declare
// them (tool.SendsOut) gets from its arguments, when a policy is
// configured for it: a "url" argument is a request there; a "channel" or
// "thread" argument a message there.
func argsDestinations(args json.RawMessage) []tool.Destination {
	var a struct {
		URL     string `json:"url"`
		Channel string `json:"channel"`
		Thread  string `json:"thread"`
	}
	if json.Unmarshal(args, &a) != nil {
		return []tool.Destination{{Anywhere: "a destination its arguments do not say", Data: string(args)}}
	}
	var out []tool.Destination
	if u := strings.TrimSpace(a.URL); u != "" {
		out = append(out, tool.Destination{URL: u, Data: u})
	}
	if a.Channel != "" || a.Thread != "" {
		out = append(out, tool.Destination{Channel: a.Channel, Thread: a.Thread, Data: string(args)})
	}
	return out
}

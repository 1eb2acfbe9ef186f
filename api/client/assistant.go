package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/reverie-ai/reverie/api"
)

// The assistant's state: memories, dreams, the data dir's history,
// pairing codes and the MCP endpoint, for the command line working beside
// a running agent.

// Memories is the client's api.Memories: the /memories endpoints.
type Memories struct{ c *Client }

var _ api.Memories = Memories{}

// Memories returns the long-term memory endpoints.
func (c *Client) Memories() Memories { return Memories{c} }

func memoryPath(id int64, rest string) string {
	return "/memories/" + strconv.FormatInt(id, 10) + rest
}

func (m Memories) get(ctx context.Context, path string, q url.Values) ([]api.Memory, error) {
	var out api.MemoryList
	err := m.c.do(ctx, http.MethodGet, m.c.endpoint(path, path, q), nil, &out, DefaultTimeout)
	return out.Memories, err
}

// Search is GET /api/v1/memories?q=…: hybrid recall without counting an
// access.
func (m Memories) Search(ctx context.Context, q api.MemorySearch) ([]api.Memory, error) {
	v := url.Values{"q": {q.Text}}
	setMemoryFilter(v, q.Kinds, nil, q.IncludeClosed, q.Limit, 0)
	return m.get(ctx, "/memories", v)
}

// List is GET /api/v1/memories.
func (m Memories) List(ctx context.Context, f api.MemoryFilter) ([]api.Memory, error) {
	v := url.Values{}
	setMemoryFilter(v, f.Kinds, f.Sources, f.IncludeClosed, f.Limit, f.Offset)
	if f.OrderByAccess {
		v.Set("order", "access")
	}
	return m.get(ctx, "/memories", v)
}

func setMemoryFilter(v url.Values, kinds, sources []string, closed bool, limit, offset int) {
	if len(kinds) > 0 {
		v.Set("kind", strings.Join(kinds, ","))
	}
	if len(sources) > 0 {
		v.Set("source", strings.Join(sources, ","))
	}
	if closed {
		v.Set("include_closed", "true")
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
}

// Get is GET /api/v1/memories/{id}.
func (m Memories) Get(ctx context.Context, id int64) (api.Memory, error) {
	var out api.Memory
	p := memoryPath(id, "")
	err := m.c.do(ctx, http.MethodGet, m.c.endpoint(p, p, nil), nil, &out, DefaultTimeout)
	return out, err
}

// Add is POST /api/v1/memories.
func (m Memories) Add(ctx context.Context, in api.MemoryInput) (api.Memory, error) {
	var out api.Memory
	err := m.c.do(ctx, http.MethodPost, m.c.endpoint("/memories", "/memories", nil), in, &out, DefaultTimeout)
	return out, err
}

// Update is PUT /api/v1/memories/{id}: it returns the current version (a
// new text is a new memory).
func (m Memories) Update(ctx context.Context, id int64, in api.MemoryInput) (api.Memory, error) {
	var out api.Memory
	p := memoryPath(id, "")
	err := m.c.do(ctx, http.MethodPut, m.c.endpoint(p, p, nil), in, &out, DefaultTimeout)
	return out, err
}

// Forget is DELETE /api/v1/memories/{id}.
func (m Memories) Forget(ctx context.Context, id int64) error {
	p := memoryPath(id, "")
	return m.c.do(ctx, http.MethodDelete, m.c.endpoint(p, p, nil), nil, nil, DefaultTimeout)
}

// History is GET /api/v1/memories/{id}/history.
func (m Memories) History(ctx context.Context, id int64) ([]api.Memory, error) {
	return m.get(ctx, memoryPath(id, "/history"), nil)
}

// Dreams is the client's api.Dreams: the /dreams endpoints.
type Dreams struct{ c *Client }

var _ api.Dreams = Dreams{}

// Dreams returns the dream endpoints.
func (c *Client) Dreams() Dreams { return Dreams{c} }

// List is GET /api/v1/dreams?limit=N.
func (d Dreams) List(ctx context.Context, limit int) ([]api.Dream, error) {
	var out api.DreamList
	err := d.c.do(ctx, http.MethodGet, d.c.endpoint("/dreams", "/dreams", url.Values{"limit": {strconv.Itoa(limit)}}), nil, &out, DefaultTimeout)
	return out.Dreams, err
}

// Revert is POST /api/v1/dreams/{id}/revert.
func (d Dreams) Revert(ctx context.Context, id int64) (api.DreamRevert, error) {
	var out api.DreamRevert
	p := "/dreams/" + strconv.FormatInt(id, 10) + "/revert"
	err := d.c.do(ctx, http.MethodPost, d.c.endpoint(p, p, nil), nil, &out, DefaultTimeout)
	return out, err
}

// Dream is POST /api/v1/dreams: a dream now, answered when it is done
// (bounded like Send). The server names the trigger.
func (d Dreams) Dream(ctx context.Context, _ string) (api.Dream, error) {
	var out api.Dream
	err := d.c.do(ctx, http.MethodPost, d.c.endpoint("/dreams", "/dreams", nil), nil, &out, DefaultTurnTimeout)
	return out, err
}

// History is the client's api.History: the /history endpoints of the data
// dir's versioned files.
type History struct{ c *Client }

var _ api.History = History{}

// History returns the history endpoints.
func (c *Client) History() History { return History{c} }

// List is GET /api/v1/history?path=&limit=.
func (h History) List(ctx context.Context, q api.HistoryQuery) ([]api.Revision, error) {
	v := url.Values{}
	if q.Path != "" {
		v.Set("path", q.Path)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out api.RevisionList
	err := h.c.do(ctx, http.MethodGet, h.c.endpoint("/history", "/history", v), nil, &out, DefaultTimeout)
	return out.Revisions, err
}

// Get is GET /api/v1/history/{rev}: one change with its diff.
func (h History) Get(ctx context.Context, rev string) (api.RevisionDiff, error) {
	var out api.RevisionDiff
	err := h.c.do(ctx, http.MethodGet, h.c.endpoint("/history/"+rev, "/history/"+url.PathEscape(rev), nil), nil, &out, DefaultTimeout)
	return out, err
}

// Restore is POST /api/v1/history/{rev}/restore: the versioned files put
// back as they were at rev, in the running agent.
func (h History) Restore(ctx context.Context, rev string) (api.RestoreResult, error) {
	var out api.RestoreResult
	p, raw := "/history/"+rev+"/restore", "/history/"+url.PathEscape(rev)+"/restore"
	err := h.c.do(ctx, http.MethodPost, h.c.endpoint(p, raw, nil), struct{}{}, &out, DefaultTimeout)
	return out, err
}

// ApprovePairing is POST /api/v1/{channel}/approve: it lets in the person
// the channel gave code.
func (c *Client) ApprovePairing(ctx context.Context, channel, code string) (api.PairingApproval, error) {
	var out api.PairingApproval
	p := "/" + channel + "/approve"
	err := c.do(ctx, http.MethodPost, c.endpoint(p, "/"+url.PathEscape(channel)+"/approve", nil), api.PairingRequest{Code: code}, &out, DefaultTimeout)
	return out, err
}

// MCPEndpoint is the URL of the agent's streamable HTTP MCP endpoint
// (/mcp, outside the API prefix).
func (c *Client) MCPEndpoint() string {
	u := *c.base
	u.Path += "/mcp"
	u.RawPath = ""
	return u.String()
}

// HTTPClient is an HTTP client that talks to the server the way c does
// (the same transport; the access token added to every request), for
// protocols other than the API's JSON (the MCP endpoint).
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{Transport: authTransport{next: c.transport(), c: c}}
}

func (c *Client) transport() http.RoundTripper {
	if c.http.Transport != nil {
		return c.http.Transport
	}
	return http.DefaultTransport
}

// authTransport adds the client's Authorization header.
type authTransport struct {
	next http.RoundTripper
	c    *Client
}

func (t authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	t.c.authorize(r.Header)
	return t.next.RoundTrip(r)
}

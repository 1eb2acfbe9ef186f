package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// Channel is the channel of the conversations of MCP clients (send_message
// writes only to threads "mcp:<name>").
const Channel = "mcp"

// DefaultThread is the conversation send_message uses when the client
// names none.
const DefaultThread chat.ThreadID = Channel + ":default"

// Resource addresses.
const (
	memoriesURI     = "reverie://MEMORIES.txt"
	worldURI        = "reverie://world_state.json"
	skillURIPrefix  = "reverie://skills/"
	memoriesFile    = "MEMORIES.txt"
	instructionText = "Reverie is the user's personal assistant. Its tools read and write the user's long-term " +
		"memory (search_memory, remember), the pulse of work in progress (list_pulse, add_pulse_item), reminders " +
		"(set_reminder, list_reminders), and send_message talks to the assistant itself. Resources: MEMORIES.txt, " +
		"the world state and each skill."
)

// NewServer builds Reverie's MCP server over the agent's services (nil
// services leave their tools out) and its data dir.
func NewServer(svc *api.Services, dataDir string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "reverie", Title: "Reverie", Version: version},
		&sdk.ServerOptions{Instructions: instructionText, HasTools: true, HasResources: true})
	b := builder{svc: svc, dataDir: dataDir, s: s}
	b.tools()
	b.resources()
	return s
}

type builder struct {
	svc     *api.Services
	dataDir string
	s       *sdk.Server
}

// Arguments of the tools.
type (
	searchArgs struct {
		Query string `json:"query" jsonschema:"what to look for, in plain words"`
		Limit int    `json:"limit,omitempty" jsonschema:"most results to return (default 10, at most 50)"`
	}
	rememberArgs struct {
		Text string `json:"text" jsonschema:"the fact to remember, one self-contained sentence"`
		Kind string `json:"kind,omitempty" jsonschema:"fact (default), preference, episode, procedure or opinion"`
	}
	listPulseArgs struct {
		Status string `json:"status,omitempty" jsonschema:"active (default), completed, cancelled or all"`
	}
	addPulseArgs struct {
		Text     string `json:"text" jsonschema:"the item of work in progress"`
		Priority int    `json:"priority,omitempty" jsonschema:"1 (highest) to 10, default 5"`
	}
	reminderArgs struct {
		Text   string `json:"text" jsonschema:"what to remind the user of"`
		When   string `json:"when,omitempty" jsonschema:"when, as an RFC 3339 time (2026-03-30T09:00:00+02:00); or use in"`
		In     string `json:"in,omitempty" jsonschema:"after how long, as a duration such as 20m or 2h"`
		Daily  string `json:"daily_at,omitempty" jsonschema:"repeat every day at this time of day (HH:MM, the assistant's time zone) instead of once"`
		Thread string `json:"thread,omitempty" jsonschema:"conversation to deliver to (e.g. web:abc); empty: the assistant tells the user where it usually does"`
	}
	listRemindersArgs struct {
		All bool `json:"all,omitempty" jsonschema:"include finished and cancelled ones"`
	}
	sendArgs struct {
		Text   string `json:"text" jsonschema:"the message to the assistant"`
		Thread string `json:"thread,omitempty" jsonschema:"conversation id, mcp:<name> (default mcp:default); other channels' threads are refused"`
	}
)

// ok is the structured answer of tools that only confirm.
type sendResult struct {
	Thread string `json:"thread"`
	Reply  string `json:"reply"`
}

func (b builder) tools() {
	svc := b.svc
	if svc.Memories != nil {
		sdk.AddTool(b.s, &sdk.Tool{Name: "search_memory", Description: "Search the user's long-term memories (hybrid full-text and semantic recall)."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a searchArgs) (*sdk.CallToolResult, any, error) {
				if strings.TrimSpace(a.Query) == "" {
					return nil, nil, errors.New("query is empty")
				}
				limit := a.Limit
				if limit <= 0 {
					limit = 10
				}
				ms, err := svc.Memories.Search(ctx, api.MemorySearch{Text: a.Query, Limit: min(limit, 50)})
				if err != nil {
					return nil, nil, refused(err)
				}
				return jsonResult(api.MemoryList{Memories: nonNil(ms)})
			})
		sdk.AddTool(b.s, &sdk.Tool{Name: "remember", Description: "Store a fact about the user in their long-term memory."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a rememberArgs) (*sdk.CallToolResult, any, error) {
				kind := a.Kind
				if kind == "" {
					kind = "fact"
				}
				m, err := svc.Memories.Add(ctx, api.MemoryInput{Text: a.Text, Kind: kind, Source: "agent"})
				if err != nil {
					return nil, nil, refused(err)
				}
				return jsonResult(m)
			})
	}
	if svc.Pulse != nil {
		sdk.AddTool(b.s, &sdk.Tool{Name: "list_pulse", Description: "List the pulse: the user's items of work in progress."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a listPulseArgs) (*sdk.CallToolResult, any, error) {
				items, err := svc.Pulse.List(ctx, a.Status)
				if err != nil {
					return nil, nil, refused(err)
				}
				return jsonResult(api.PulseList{Items: nonNil(items)})
			})
		sdk.AddTool(b.s, &sdk.Tool{Name: "add_pulse_item", Description: "Add an item of work in progress to the pulse."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a addPulseArgs) (*sdk.CallToolResult, any, error) {
				in := api.PulseInput{Text: &a.Text}
				if a.Priority != 0 {
					in.Priority = &a.Priority
				}
				it, err := svc.Pulse.Add(ctx, in)
				if err != nil {
					return nil, nil, refused(err)
				}
				return jsonResult(it)
			})
	}
	if svc.Tasks != nil {
		sdk.AddTool(b.s, &sdk.Tool{Name: "set_reminder", Description: "Set a reminder for the user: once (when or in) or daily (daily_at)."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a reminderArgs) (*sdk.CallToolResult, any, error) {
				in, err := reminderInput(a, time.Now())
				if err != nil {
					return nil, nil, err
				}
				t, err := svc.Tasks.Add(ctx, in)
				if err != nil {
					return nil, nil, refused(err)
				}
				return jsonResult(t)
			})
		sdk.AddTool(b.s, &sdk.Tool{Name: "list_reminders", Description: "List the user's reminders and scheduled tasks with their next run."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a listRemindersArgs) (*sdk.CallToolResult, any, error) {
				q := api.TaskQuery{}
				if a.All {
					q.Statuses = []string{api.TaskActive, api.TaskPaused, api.TaskDone, api.TaskCancelled}
				}
				ts, err := svc.Tasks.List(ctx, q)
				if err != nil {
					return nil, nil, refused(err)
				}
				return jsonResult(api.TaskList{Tasks: nonNil(ts)})
			})
	}
	if svc.Chat != nil {
		sdk.AddTool(b.s, &sdk.Tool{Name: "send_message", Description: "Send a message to the assistant in an MCP conversation (mcp:<name>) and get its reply. A tool call that needs the user's approval is refused at once in these conversations (the user approves on their own channels)."},
			func(ctx context.Context, _ *sdk.CallToolRequest, a sendArgs) (*sdk.CallToolResult, any, error) {
				if strings.TrimSpace(a.Text) == "" {
					return nil, nil, errors.New("text is empty")
				}
				thread := DefaultThread
				if a.Thread != "" {
					thread = chat.ThreadID(a.Thread)
				}
				if err := thread.Validate(); err != nil {
					return nil, nil, err
				}
				// Only the MCP clients' own conversations: a message in
				// the user's chats, a worker's (sub_…) or the system's
				// would speak for them there — its "yes" would answer
				// their pending approvals.
				if thread.Channel() != Channel {
					return nil, nil, fmt.Errorf("thread %q: send_message writes only to MCP conversations (%s:<name>)", thread, Channel)
				}
				reply, err := svc.Chat.Handle(ctx, chat.Inbound{
					Address: chat.Address{Channel: Channel, Thread: thread},
					Sender:  chat.Sender{ID: "mcp", DisplayName: "MCP client"},
					Text:    a.Text,
				})
				if err != nil && !errors.Is(err, api.ErrTurnFailed) {
					return nil, nil, refused(err)
				}
				return jsonResult(sendResult{Thread: string(thread), Reply: reply.Reply})
			})
	}
}

// reminderInput turns set_reminder's arguments into a task.
func reminderInput(a reminderArgs, now time.Time) (api.TaskInput, error) {
	if strings.TrimSpace(a.Text) == "" {
		return api.TaskInput{}, errors.New("text is empty")
	}
	in := api.TaskInput{Text: a.Text, Thread: a.Thread}
	set := 0
	for _, v := range []string{a.When, a.In, a.Daily} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return in, errors.New("give exactly one of when, in and daily_at")
	}
	switch {
	case a.When != "":
		at, err := time.Parse(time.RFC3339, a.When)
		if err != nil {
			return in, fmt.Errorf("when %q: want an RFC 3339 time such as 2026-03-30T09:00:00+02:00", a.When)
		}
		in.Schedule = api.Schedule{Kind: "once", At: &at}
	case a.In != "":
		d, err := time.ParseDuration(a.In)
		if err != nil || d <= 0 {
			return in, fmt.Errorf("in %q: want a positive duration such as 20m or 2h", a.In)
		}
		at := now.Add(d)
		in.Schedule = api.Schedule{Kind: "once", At: &at}
	default:
		in.Schedule = api.Schedule{Kind: "daily", Time: a.Daily}
	}
	return in, nil
}

func (b builder) resources() {
	b.s.AddResource(&sdk.Resource{URI: memoriesURI, Name: "MEMORIES.txt", MIMEType: "text/plain",
		Description: "The user's long-term memories the assistant keeps in its prompt, one per line."},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			data, err := readFile(filepath.Join(b.dataDir, memoriesFile))
			if err != nil {
				return nil, err
			}
			return textResource(memoriesURI, "text/plain", data), nil
		})
	if b.svc.World != nil {
		b.s.AddResource(&sdk.Resource{URI: worldURI, Name: "world_state.json", MIMEType: "application/json",
			Description: "What the assistant takes as true about its situation: the user, place, time zone, project, topics, goals, rules."},
			func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				doc, err := b.svc.World.Get(ctx)
				if err != nil {
					return nil, err
				}
				return textResource(worldURI, "application/json", string(doc)), nil
			})
	}
	if b.svc.Skills != nil {
		b.s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: skillURIPrefix + "{name}", Name: "skill", MIMEType: "text/markdown",
			Description: "A learned procedure (skills/<name>.md): first line the summary, steps below."}, b.readSkill)
		sk := &skillResources{b: b, known: map[string]bool{}}
		b.s.AddReceivingMiddleware(sk.middleware)
	}
}

func (b builder) readSkill(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	name, ok := strings.CutPrefix(uri, skillURIPrefix)
	if !ok || name == "" {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if n, err := url.PathUnescape(name); err == nil {
		name = n
	}
	sk, err := b.svc.Skills.Get(ctx, name)
	if errors.Is(err, api.ErrNotFound) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	return textResource(uri, "text/markdown", sk.Content), nil
}

// skillResources keeps one resource per skill, brought up to date before
// every resources/list.
type skillResources struct {
	b     builder
	mu    sync.Mutex
	known map[string]bool
}

func (s *skillResources) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "resources/list" {
			if err := s.sync(ctx); err != nil {
				return nil, fmt.Errorf("list skills: %w", err)
			}
		}
		return next(ctx, method, req)
	}
}

func (s *skillResources) sync(ctx context.Context) error {
	skills, err := s.b.svc.Skills.List(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := map[string]bool{}
	for _, sk := range skills {
		now[sk.Name] = true
		if s.known[sk.Name] {
			continue
		}
		s.b.s.AddResource(&sdk.Resource{URI: skillURIPrefix + url.PathEscape(sk.Name), Name: "skill " + sk.Name,
			MIMEType: "text/markdown", Description: sk.Summary}, s.b.readSkill)
	}
	var gone []string
	for name := range s.known {
		if !now[name] {
			gone = append(gone, skillURIPrefix+url.PathEscape(name))
		}
	}
	if len(gone) > 0 {
		s.b.s.RemoveResources(gone...)
	}
	s.known = now
	return nil
}

// maxResourceFile bounds a file served as a resource.
const maxResourceFile = 4 << 20

func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxResourceFile))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return string(data), nil
}

func textResource(uri, mime, text string) *sdk.ReadResourceResult {
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}
}

// refused is a service's refusal as a tool's answer: the reason in words,
// without the API error's word in front ("invalid: …"), as the CLI and the
// HTTP API say it (api.Reason).
func refused(err error) error { return errors.New(api.Reason(err)) }

// jsonResult answers with v as JSON text (and as structured content).
func jsonResult(v any) (*sdk.CallToolResult, any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ServeStdio runs Reverie's MCP server on in and out (newline-delimited
// JSON-RPC, as `reverie mcp` does on its standard input and output) until
// the client disconnects or ctx ends.
func ServeStdio(ctx context.Context, svc *api.Services, dataDir string, in io.Reader, out io.Writer) error {
	err := NewServer(svc, dataDir).Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) || ctx.Err() != nil) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// sessionTimeout closes HTTP sessions idle this long.
const sessionTimeout = 30 * time.Minute

// httpServer serves Reverie's MCP server over streamable HTTP (/mcp). The
// server is built at the first request, so an agent nobody connects to
// pays nothing for it at start.
type httpServer struct {
	handler  func() http.Handler
	stopping chan struct{} // closed when the agent shuts down: open streams end
	stopOnce sync.Once
}

func newHTTPServer(svc *api.Services, dataDir string, log *slog.Logger) *httpServer {
	return &httpServer{
		handler: sync.OnceValue(func() http.Handler {
			srv := NewServer(svc, dataDir)
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
				&sdk.StreamableHTTPOptions{SessionTimeout: sessionTimeout, Logger: log.With("component", "mcp_http")})
			// Browsers may not drive it from other sites (MCP clients send
			// no Origin or Sec-Fetch-Site headers).
			return http.NewCrossOriginProtection().Handler(h)
		}),
		stopping: make(chan struct{}),
	}
}

// run waits for ctx to end, then ends the open event streams.
func (h *httpServer) run(ctx context.Context) {
	<-ctx.Done()
	h.stopOnce.Do(func() { close(h.stopping) })
}

func (h *httpServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-h.stopping:
			cancel()
		case <-stop:
		}
	}()
	defer func() { close(stop); <-watched }()
	if r.Method == http.MethodGet || r.Method == http.MethodPost {
		// Event streams and tool calls (send_message runs a whole turn)
		// outlive the web listener's write timeout.
		_ = http.NewResponseController(rw).SetWriteDeadline(time.Time{})
	}
	h.handler().ServeHTTP(rw, r.WithContext(ctx))
}

// BridgeStdio relays the MCP client on in and out to the streamable HTTP
// MCP endpoint at endpoint (a running agent's /mcp, reached with hc), so
// that a client that can only launch a stdio server (Claude Desktop) talks
// to the running agent. It returns when ctx ends, when the endpoint fails,
// or when in ends and every request read from it has been answered.
func BridgeStdio(ctx context.Context, endpoint string, hc *http.Client, in io.Reader, out io.Writer) error {
	local, err := (&sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}).Connect(ctx)
	if err != nil {
		return fmt.Errorf("open standard input and output: %w", err)
	}
	remote, err := (&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}).Connect(ctx)
	if err != nil {
		_ = local.Close()
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &bridge{pending: map[string]bool{}, idle: make(chan struct{})}
	var wg sync.WaitGroup
	var upErr, downErr error
	wg.Go(func() {
		upErr = b.pump(ctx, local, remote, true)
		// The client's input ended: wait for the answers it is owed.
		b.waitIdle(ctx)
		cancel()
	})
	wg.Go(func() {
		downErr = b.pump(ctx, remote, local, false)
		cancel()
	})
	<-ctx.Done()
	_ = local.Close()
	_ = remote.Close()
	wg.Wait()
	for _, err := range []error{downErr, upErr} {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, sdk.ErrConnectionClosed) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("MCP bridge: %w", err)
		}
	}
	return nil
}

// bridge tracks the client's requests the endpoint has not answered.
type bridge struct {
	mu      sync.Mutex
	pending map[string]bool
	done    bool          // the client's input ended
	idle    chan struct{} // closed once done and nothing is pending
	closed  bool
}

// pump copies messages from one connection to the other until a read or
// write fails; up is the client → endpoint direction.
func (b *bridge) pump(ctx context.Context, from, to sdk.Connection, up bool) error {
	for {
		msg, err := from.Read(ctx)
		if err != nil {
			if up {
				b.finish()
			}
			return err
		}
		// A request counts as pending before it goes up (its answer may
		// come back at once); an answer counts once it has been written
		// down: counted before, the bridge could close standard output
		// with the last answer still unwritten.
		if up {
			b.track(msg, up)
		}
		if err := to.Write(ctx, msg); err != nil {
			return err
		}
		if !up {
			b.track(msg, up)
		}
	}
}

func (b *bridge) track(msg jsonrpc.Message, up bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if up && m.IsCall() {
			b.pending[fmt.Sprint(m.ID.Raw())] = true
		}
	case *jsonrpc.Response:
		if !up {
			delete(b.pending, fmt.Sprint(m.ID.Raw()))
		}
	}
	b.check()
}

func (b *bridge) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	b.check()
}

// check closes idle once the input ended with nothing pending; b.mu held.
func (b *bridge) check() {
	if b.done && len(b.pending) == 0 && !b.closed {
		b.closed = true
		close(b.idle)
	}
}

// waitIdle waits, when the input ended, until every request is answered
// or ctx ends; it returns at once when the input did not end (a write
// failed).
func (b *bridge) waitIdle(ctx context.Context) {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if !done {
		return
	}
	select {
	case <-b.idle:
	case <-ctx.Done():
	}
}

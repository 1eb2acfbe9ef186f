package approval

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Component names the approvals schema in the migration table.
const Component = "approval"

// DefaultTimeout is how long a request waits for an answer by default.
const DefaultTimeout = 10 * time.Minute

// Errors. The messages are what the model reads as the call's result.
var (
	// ErrDenied: the user said no.
	ErrDenied = errors.New("the user denied this call")
	// ErrExpired: nobody answered before the deadline.
	ErrExpired = errors.New("the user did not answer the approval request in time, so this call was not run")
	// ErrNobodyToAsk: a background worker's call needs approval.
	ErrNobodyToAsk = errors.New("this call needs the user's approval, and there is nobody to ask in a background task; ask the user in the conversation instead")
	// ErrCannotAsk: the turn's channel cannot show an approval request
	// (an MCP client's conversation): refused at once rather than left
	// waiting for an answer nobody is asked for.
	ErrCannotAsk = errors.New("this call needs the user's approval, and this conversation cannot ask the user (it belongs to a program, not to the user's chat); ask the user to do it from their own chat instead")
	// ErrNotFound: no approval request has that id. Errors read
	// `approval request "x" not found`.
	ErrNotFound = errors.New("not found")
	// ErrDecided: the request was already answered or expired.
	ErrDecided = errors.New("the approval request is no longer pending")
)

//go:embed migrations/*.sql
var migrations embed.FS

// Event topics published on Options.Events.
const (
	// TopicRequested: a call waits for approval (id, thread, tool, reason).
	TopicRequested = "approval.requested"
	// TopicDecided: a request was approved, denied or expired (and how).
	TopicDecided = "approval.decided"
)

// Publisher receives the approval events.
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any) error
}

// Deliverer hands an approval request to the channel the turn came from.
type Deliverer interface {
	Deliver(ctx context.Context, out chat.Outbound) error
}

// DeliverFunc adapts a function to Deliverer.
type DeliverFunc func(ctx context.Context, out chat.Outbound) error

// Deliver calls f.
func (f DeliverFunc) Deliver(ctx context.Context, out chat.Outbound) error { return f(ctx, out) }

// Options configure a Service.
type Options struct {
	DB *sql.DB
	// Policies by tool name; tools not named get DefaultPolicies' entry, or
	// Never.
	Policies map[string]Policy
	// Timeout is how long a request waits (default DefaultTimeout).
	Timeout time.Duration
	// Deliver shows requests and outcomes to the user (nil: nowhere; the
	// requests can still be listed and answered).
	Deliver Deliverer
	// Shared reports whether thread is read by other people too (a group
	// chat) and, if so, the owner's private thread where its requests are
	// shown and answered instead ("" when there is none: they are answered
	// on the web page or the API only); the shared thread gets a note
	// without the call's data. nil: every thread is private.
	Shared func(thread chat.ThreadID) (private chat.ThreadID, shared bool)
	// CanAsk reports whether a turn on channel can ask its user (a running
	// channel that shows requests); a call there that needs approval is
	// refused at once with ErrCannotAsk otherwise. nil: every channel can.
	CanAsk func(channel string) bool
	// Tool finds a tool by name, to tell which earlier results of a
	// conversation are untrusted input and where their calls went, when
	// the run's own tools (toolloop.ApprovalRequest.Tools) do not have it.
	// A result of a tool neither knows (an MCP server removed since; every
	// tool when both are nil) counts as untrusted.
	Tool func(name string) (tool.Tool, bool)
	// History returns a thread's stored messages, read when a call comes
	// without the conversation it was made in (a call of an interrupted
	// round run again after a restart, toolloop.RunCalls); nil: such a
	// call is judged without it.
	History func(ctx context.Context, thread chat.ThreadID) ([]llm.Message, error)
	// FromUser reports whether a user-role message's text was written by
	// the user, not injected by the system (system events, the seed); a
	// message that was not is untrusted input. nil: every user message
	// counts as the user's.
	FromUser func(text string) bool
	// AppWritten reports whether a user-role message the user did not
	// write (FromUser false) is the application's own text (the
	// conversation seed), which is not untrusted input; nil: none is.
	AppWritten func(text string) bool
	// Events receives TopicRequested and TopicDecided (nil: none).
	Events Publisher
	// Secrets are redacted from the arguments and the reason before they
	// are stored or shown (nil: none).
	Secrets *redact.Secrets
	// LeaveOverdue: Run does not begin by expiring the requests already
	// overdue; its first pass waits for a new request. For a one-shot
	// process (reverie send), which would otherwise run that pass beside
	// its turn and open a database connection for it: the outcome of an
	// old request is told through channels such a process does not load,
	// and the next long-running agent expires it.
	LeaveOverdue bool
	Now          func() time.Time
	Logger       *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Record is an approval request.
type Record struct {
	ID        string
	Thread    chat.ThreadID
	Channel   string
	CallID    string
	Tool      string
	Arguments string
	Reason    string
	State     chat.ApprovalState
	CreatedAt time.Time
	Deadline  time.Time
	DecidedAt time.Time
	// DecidedVia says how it was answered ("web", "http", "text", "cli",
	// "timeout").
	DecidedVia string
}

// Service decides, records and waits for approvals. It is safe for
// concurrent use.
type Service struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	waiters map[string]*waiter // calls waiting, by request id
	wake    chan struct{}      // a new deadline for Run
}

// New migrates the approvals table and returns a Service.
func New(ctx context.Context, opts Options) (*Service, error) {
	if opts.DB == nil {
		return nil, errors.New("approval: no database")
	}
	if err := opts.Migrations.Migrate(ctx, opts.DB, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	for name, p := range opts.Policies {
		if !p.Valid() {
			return nil, fmt.Errorf("approval: tool %q: unknown policy %q", name, p)
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{o: opts, log: opts.Logger, waiters: map[string]*waiter{}, wake: make(chan struct{}, 1)}, nil
}

// PolicyFor returns the policy of t, called name: the configured one, else
// DefaultPolicies' entry, else the one t declares (tool.DefaultApproval),
// else Untrusted for an outward tool (tool.SendsOut) and Never for the
// others.
func (s *Service) PolicyFor(t tool.Tool, name string) Policy {
	if p, ok := s.o.Policies[name]; ok {
		return p.Canonical()
	}
	if p, ok := DefaultPolicies()[name]; ok {
		return p
	}
	if p, ok := tool.DefaultApprovalOf(t); ok && Policy(p).Valid() {
		return Policy(p).Canonical()
	}
	if o, ok := t.(tool.Outward); ok && o.SendsOut() {
		return Untrusted
	}
	return Never
}

// destinations are where a call of t with args can carry data: what t
// declares (tool.SendsOut), else what its arguments name.
func destinations(t tool.Tool, args json.RawMessage) []tool.Destination {
	if t != nil {
		if d, ok := tool.DestinationsOf(t, args); ok {
			return d
		}
	}
	return argsDestinations(args)
}

// background reports whether a call has nobody to ask: a sub-session's,
// a scheduled task's, or one outside any turn.
func background(call tool.Call, inTurn bool) bool {
	return !inTurn || call.Thread == "" || call.Thread.IsSubSession() || call.Background || call.Thread.Channel() == ""
}

// Taint reports whether the conversation of req holds untrusted input,
// and what it was (toolloop.Tainter): the tool loop hands it to the call,
// so that work the call starts in the background (a sub-session, an AI
// task) inherits it.
func (s *Service) Taint(ctx context.Context, req toolloop.ApprovalRequest) (tool.Taint, bool) {
	call, inTurn := tool.CallFrom(ctx)
	req, err := s.withHistory(ctx, req, call, inTurn)
	if err != nil {
		// Unknown: assume the worst.
		return tool.Taint{Source: "a conversation that could not be read"}, true
	}
	f := s.facts(ctx, req, background(call, inTurn))
	return tool.Taint{Source: f.Taint}, f.Taint != ""
}

// withHistory fills req.Messages from the stored thread when the call
// came without them (a call of an interrupted round run again).
func (s *Service) withHistory(ctx context.Context, req toolloop.ApprovalRequest, call tool.Call, inTurn bool) (toolloop.ApprovalRequest, error) {
	if len(req.Messages) == 0 && inTurn && call.Thread != "" && s.o.History != nil {
		msgs, err := s.o.History(ctx, call.Thread)
		if err != nil {
			return req, fmt.Errorf("approval: read the conversation: %w", err)
		}
		req.Messages = msgs
	}
	return req, nil
}

// Approve implements toolloop.Approver: it returns nil when the call may
// run, ErrDenied or ErrExpired (wrapped) when the user refused or did not
// answer, ErrNobodyToAsk outside a conversation, and ctx's error when ctx
// ended first (the request then stays pending, for a resumed turn).
//
// A call that is already held for approval (a request of the same thread,
// call id, tool and arguments: the turn was interrupted by a restart and
// makes the call again) waits on that request, whatever the policy would
// say now — or takes its answer, when the user answered while no call
// waited.
func (s *Service) Approve(ctx context.Context, req toolloop.ApprovalRequest) error {
	policy := s.PolicyFor(req.Tool, req.Call.Name)
	if policy == Never {
		return nil
	}
	call, inTurn := tool.CallFrom(ctx)
	bg := background(call, inTurn)
	channel := call.Thread.Channel()
	// What is stored and shown: the arguments without secret values.
	args := string(s.o.Secrets.RedactJSON(req.Call.Arguments))
	var rec Record
	var done <-chan struct{}
	if inTurn && call.Thread != "" {
		var err error
		if rec, err = s.heldFor(ctx, call.Thread, req.Call, args); err != nil {
			return fmt.Errorf("approval: %w", err)
		}
		if rec.State == chat.ApprovalPending {
			var release func()
			done, release = s.waiter(rec.ID) // waited on from now: not stale (supersede)
			defer release()
		}
	}
	if rec.ID == "" {
		var err error
		if req, err = s.withHistory(ctx, req, call, inTurn); err != nil {
			return err
		}
		sit := Situation{
			Tool: req.Call.Name, Destinations: destinations(req.Tool, req.Call.Arguments),
			Thread: string(call.Thread), Facts: s.facts(ctx, req, bg), Redirect: req.Further,
		}
		if !bg {
			sit.Channel = channel
		}
		need, reason := Decide(policy, sit)
		if !need {
			return nil
		}
		if bg {
			return fmt.Errorf("%w (%s)", ErrNobodyToAsk, reason)
		}
		if s.o.CanAsk != nil && !s.o.CanAsk(channel) {
			return fmt.Errorf("%w (%s)", ErrCannotAsk, reason)
		}
		now := s.o.Now()
		rec = Record{ID: newID(), Thread: call.Thread, Channel: channel, CallID: req.Call.ID, Tool: req.Call.Name,
			Arguments: args, Reason: s.o.Secrets.Redact(reason), State: chat.ApprovalPending,
			CreatedAt: now, Deadline: now.Add(s.o.Timeout)}
		// Waited on before it is stored: a parallel call's supersede
		// must not take it for stale.
		var release func()
		done, release = s.waiter(rec.ID)
		defer release()
		if err := s.insert(ctx, rec); err != nil {
			return fmt.Errorf("approval: %w", err)
		}
		s.supersede(ctx, rec)
		s.log.Info("tool call waits for approval", "id", rec.ID, "thread", rec.Thread, "tool", rec.Tool, "reason", rec.Reason)
		s.publish(ctx, TopicRequested, rec)
		s.poke()
	} else if rec.State != chat.ApprovalPending {
		s.log.Info("resumed call takes the answer given while it was not waiting", "id", rec.ID, "thread", rec.Thread, "tool", rec.Tool, "state", rec.State)
		return s.consume(ctx, rec.ID, rec.State)
	} else {
		s.log.Info("resumed call waits for its earlier approval request", "id", rec.ID, "thread", rec.Thread, "tool", rec.Tool)
	}
	s.deliver(ctx, rec)
	return s.wait(ctx, rec, done)
}

// supersede closes the pending requests of rec's thread that no call
// waits on: a thread runs one turn at a time, so they are left from a turn
// interrupted by a crash, which asked again (rec) under another call id
// when it resumed. Left pending, the user's "yes" would answer the stale
// one (the oldest) and the real request would expire.
func (s *Service) supersede(ctx context.Context, rec Record) {
	pending, err := s.Pending(ctx, rec.Thread)
	if err != nil {
		s.log.Warn("could not look for stale approval requests", "thread", rec.Thread, "err", err)
		return
	}
	for _, p := range pending {
		if p.ID == rec.ID || s.waited(p.ID) {
			continue
		}
		if _, err := s.decide(context.WithoutCancel(ctx), p.ID, chat.ApprovalExpired, ViaSuperseded); err != nil && !errors.Is(err, ErrDecided) {
			s.log.Warn("could not close a stale approval request", "id", p.ID, "err", err)
		}
	}
}

// waited reports whether a call of this process waits on request id.
func (s *Service) waited(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.waiters[id]
	return ok
}

// ViaSuperseded is the DecidedVia of a request closed because the turn,
// resumed after a crash, asked again (see supersede).
const ViaSuperseded = "superseded"

// consume marks that a call took the decision of request id and returns
// the call's verdict.
func (s *Service) consume(ctx context.Context, id string, state chat.ApprovalState) error {
	if _, err := s.o.DB.ExecContext(context.WithoutCancel(ctx), `UPDATE approvals SET consumed = 1 WHERE id = ?`, id); err != nil {
		s.log.Warn("could not mark an approval as taken", "id", id, "err", err)
	}
	return verdict(state)
}

// wait blocks until rec is decided, its deadline passes or ctx ends.
func (s *Service) wait(ctx context.Context, rec Record, done <-chan struct{}) error {
	// Answered between the insert and the waiter's registration?
	if got, err := s.Get(ctx, rec.ID); err == nil && got.State != chat.ApprovalPending {
		return s.consume(ctx, rec.ID, got.State)
	}
	timer := time.NewTimer(max(rec.Deadline.Sub(s.o.Now()), 0))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		if _, err := s.decide(context.WithoutCancel(ctx), rec.ID, chat.ApprovalExpired, "timeout"); err != nil && !errors.Is(err, ErrDecided) {
			return fmt.Errorf("approval: expire %s: %w", rec.ID, err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	got, err := s.Get(context.WithoutCancel(ctx), rec.ID)
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	return s.consume(ctx, rec.ID, got.State)
}

// verdict is Approve's answer for a decided state.
func verdict(state chat.ApprovalState) error {
	switch state {
	case chat.ApprovalApproved:
		return nil
	case chat.ApprovalExpired:
		return ErrExpired
	default:
		return ErrDenied
	}
}

// facts reads the conversation a call was made in, all of it that the
// model sees (earlier turns too): the URLs and hosts the user wrote, and
// the untrusted input in it and where it came from. A background
// worker's conversation has no message of the user's (its objective or
// prompt was written by a model), and starts tainted when the work was
// started from a tainted conversation (tool.TaintFrom).
func (s *Service) facts(ctx context.Context, req toolloop.ApprovalRequest, bg bool) Facts {
	var f Facts
	// A delegated agent's task (its user-role message) was written by the
	// model that called the agent: when that conversation was already
	// tainted, the task may be an injection's words, so the addresses in
	// it are not the user's. From a clean conversation they stand for the
	// user's, as they would in the turn itself.
	inherited, tainted := tool.TaintFrom(ctx)
	if call, ok := tool.CallFrom(ctx); ok && call.Delegate != "" && tainted {
		bg = true
		f.Taint = inherited.Source
	}
	calls := map[string]llm.ToolCall{}
	taint := func(source string, hosts ...string) {
		if f.Taint == "" {
			f.Taint = source
		}
		for _, h := range hosts {
			if h != "" && !slices.Contains(f.TaintHosts, h) {
				f.TaintHosts = append(f.TaintHosts, h)
			}
		}
	}
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llm.ToolCall:
				calls[p.ID] = p
			case llm.ToolResult:
				t, untrusted := s.untrusted(req, p.Name)
				if !untrusted {
					continue
				}
				var hosts []string
				if c, ok := calls[p.CallID]; ok {
					for _, d := range destinations(t, c.Arguments) {
						if d.URL != "" {
							hosts = append(hosts, hostOf(d.URL))
						}
					}
				}
				if final := finalURL(p.Content); final != "" {
					hosts = append(hosts, hostOf(final))
				}
				source := "a " + p.Name + " result"
				if len(hosts) > 0 {
					source += " from " + hosts[0]
				}
				taint(source, hosts...)
			}
		}
		if m.Role != llm.RoleUser || bg {
			continue
		}
		text := m.Text()
		if s.o.FromUser != nil && !s.o.FromUser(text) {
			if s.o.AppWritten == nil || !s.o.AppWritten(text) {
				taint("a message you did not write")
			}
			continue
		}
		f.UserURLs = appendNew(f.UserURLs, URLsIn(text)...)
		if f.Taint == "" {
			f.UserHosts = appendNew(f.UserHosts, HostsIn(text)...)
		}
	}
	// Inherited: the work was started from a tainted conversation. (A
	// call's own context carries its conversation's taint too, which the
	// messages already told.)
	if tainted && f.Taint == "" {
		f.Taint = inherited.Source
	}
	return f
}

// untrusted reports whether the results of the tool called name are
// untrusted input, with the tool when it is known: one of the run's
// (req.Tools), else of the service's (Options.Tool).
func (s *Service) untrusted(req toolloop.ApprovalRequest, name string) (tool.Tool, bool) {
	for _, find := range []func(string) (tool.Tool, bool){req.Tools, s.o.Tool} {
		if find == nil {
			continue
		}
		if t, ok := find(name); ok {
			return t, tool.ReturnsUntrusted(t)
		}
	}
	return nil, true
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// Answer decides a pending request: approve or deny. via says how the
// user answered ("web", "http", "cli", "text"). It returns ErrNotFound or
// ErrDecided (wrapped) when there is nothing pending to decide.
func (s *Service) Answer(ctx context.Context, id string, approve bool, via string) (Record, error) {
	state := chat.ApprovalDenied
	if approve {
		state = chat.ApprovalApproved
	}
	return s.decide(ctx, id, state, via)
}

// AnswerText treats text as the user's reply to the oldest pending request
// of thread when it is a plain yes or no ("yes", "y", "approve", "allow";
// "no", "n", "deny"), and reports whether it was one. Any other text is
// not an answer (handled is false) and is left for the conversation.
func (s *Service) AnswerText(ctx context.Context, thread chat.ThreadID, text string) (rec Record, handled bool, err error) {
	approve, ok := yesNo(text)
	if !ok {
		return Record{}, false, nil
	}
	all, err := s.Pending(ctx, "")
	if err != nil {
		return Record{}, false, err
	}
	// A request is answered where it was shown: its thread, or for a
	// shared thread (a group) the owner's private thread — never by the
	// group's other members.
	pending := slices.DeleteFunc(all, func(r Record) bool { return s.askThread(r.Thread) != thread })
	if len(pending) == 0 {
		return Record{}, false, nil
	}
	rec, err = s.Answer(ctx, pending[0].ID, approve, "text")
	return rec, err == nil, err
}

// askThread is where the requests of thread are shown and answered by
// text: thread itself, or the owner's private thread for a shared one
// ("" when there is none).
func (s *Service) askThread(thread chat.ThreadID) chat.ThreadID {
	if s.o.Shared == nil {
		return thread
	}
	if private, shared := s.o.Shared(thread); shared {
		return private
	}
	return thread
}

// Intercept implements router.Interceptor: a plain yes or no on a thread
// with a pending request answers it (see AnswerText).
func (s *Service) Intercept(ctx context.Context, msg chat.Inbound) (string, bool) {
	if msg.Address.Channel == "" || msg.Address.Channel != msg.Address.Thread.Channel() {
		return "", false // only the thread's own channel speaks for its user
	}
	rec, ok, err := s.AnswerText(ctx, msg.Address.Thread, msg.Text)
	if err != nil {
		s.log.Warn("could not take a reply as an approval answer; it goes to the conversation", "thread", msg.Address.Thread, "err", err)
		return "", false
	}
	if !ok {
		return "", false
	}
	return Describe(rec), true
}

func yesNo(text string) (approve, ok bool) {
	t := strings.ToLower(strings.TrimRight(strings.TrimSpace(text), ".!"))
	switch t {
	case "yes", "y", "approve", "approved", "allow":
		return true, true
	case "no", "n", "deny", "denied", "refuse":
		return false, true
	}
	return false, false
}

// decide moves a pending record to state, wakes its waiter and tells the
// channel.
func (s *Service) decide(ctx context.Context, id string, state chat.ApprovalState, via string) (Record, error) {
	res, err := s.o.DB.ExecContext(ctx,
		`UPDATE approvals SET state = ?, decided_at = ?, decided_via = ? WHERE id = ? AND state = ?`,
		string(state), s.o.Now().UnixMilli(), via, id, string(chat.ApprovalPending))
	if err != nil {
		return Record{}, fmt.Errorf("decide approval %s: %w", id, err)
	}
	rec, gerr := s.Get(ctx, id)
	if n, _ := res.RowsAffected(); n == 0 {
		if gerr != nil {
			return Record{}, gerr
		}
		return rec, fmt.Errorf("approval %s is %s: %w", id, rec.State, ErrDecided)
	}
	if gerr != nil {
		return Record{}, gerr
	}
	s.log.Info("approval decided", "id", id, "thread", rec.Thread, "tool", rec.Tool, "state", state, "via", via)
	s.publish(ctx, TopicDecided, rec)
	// The outcome is shown before the waiting call goes on, so that it
	// comes before anything the resumed turn says.
	s.deliver(ctx, rec)
	s.mu.Lock()
	if w, ok := s.waiters[id]; ok {
		close(w.decided)
		delete(s.waiters, id)
	}
	s.mu.Unlock()
	return rec, nil
}

// publish reports rec on topic; a failure is logged.
func (s *Service) publish(ctx context.Context, topic string, rec Record) {
	if s.o.Events == nil {
		return
	}
	payload := struct {
		ID     string             `json:"id"`
		Thread chat.ThreadID      `json:"thread"`
		Tool   string             `json:"tool"`
		Reason string             `json:"reason"`
		State  chat.ApprovalState `json:"state"`
		Via    string             `json:"via,omitempty"`
	}{rec.ID, rec.Thread, rec.Tool, rec.Reason, rec.State, rec.DecidedVia}
	if err := s.o.Events.Publish(context.WithoutCancel(ctx), topic, payload); err != nil {
		s.log.Warn("could not publish an approval event", "topic", topic, "id", rec.ID, "err", err)
	}
}

// waiter is the calls of this process waiting on one request.
type waiter struct {
	decided chan struct{} // closed when the request is decided
	n       int           // calls waiting
}

// waiter registers a call waiting on request id: it returns the channel
// closed when id is decided, and release, called when the call stops
// waiting (a request nobody waits on any more is stale; see supersede).
func (s *Service) waiter(id string) (decided <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.waiters[id]
	if !ok {
		w = &waiter{decided: make(chan struct{})}
		s.waiters[id] = w
	}
	w.n++
	return w.decided, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.n--; w.n == 0 && s.waiters[id] == w {
			delete(s.waiters, id)
		}
	}
}

// deliver shows rec to the user in its thread's channel; a failure is
// logged (the request can still be answered from the web page or API).
func (s *Service) deliver(ctx context.Context, rec Record) {
	if s.o.Deliver == nil || rec.Channel == "" {
		return
	}
	out := chat.Outbound{
		Address: chat.Address{Channel: rec.Channel, Thread: rec.Thread},
		Kind:    chat.AskApproval,
		Text:    Describe(rec),
		Approval: &chat.Approval{ID: rec.ID, Tool: rec.Tool, Arguments: []byte(rec.Arguments),
			Reason: rec.Reason, State: rec.State, Deadline: rec.Deadline},
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ask := s.askThread(rec.Thread); ask != rec.Thread {
		// A group sees that something waits, not what: the request
		// (tool, arguments, reason) goes to the owner's private chat.
		note := chat.Outbound{Address: out.Address, Kind: chat.Notify, Text: sharedNote(rec, ask != "")}
		if err := s.o.Deliver.Deliver(dctx, note); err != nil {
			s.log.Warn("could not tell a shared thread about an approval request", "id", rec.ID, "thread", rec.Thread, "err", err)
		}
		if ask == "" {
			return
		}
		out.Address = chat.Address{Channel: ask.Channel(), Thread: ask}
		if rec.State == chat.ApprovalPending {
			out.Text += "\n(Asked in the group chat " + string(rec.Thread) + "; only you see this.)"
		}
	}
	if err := s.o.Deliver.Deliver(dctx, out); err != nil {
		s.log.Warn("could not show an approval request; it can still be answered on the web page", "id", rec.ID, "channel", out.Address.Channel, "err", err)
	}
}

// sharedNote is what a shared thread (a group) is told of rec: its state,
// never its tool, arguments or reason.
func sharedNote(rec Record, privately bool) string {
	switch rec.State {
	case chat.ApprovalApproved:
		return "The owner approved the held action."
	case chat.ApprovalDenied:
		return "The owner denied the held action."
	case chat.ApprovalExpired:
		return "The held action was not approved, so it did not run."
	}
	if privately {
		return "An action waits for the owner's approval; the request was sent to the owner privately."
	}
	return "An action waits for the owner's approval, on the web page."
}

// maxShownArgs bounds the arguments quoted in a text request.
const maxShownArgs = 600

// Describe is the plain-text form of rec for channels without buttons.
func Describe(rec Record) string {
	args := rec.Arguments
	if r := []rune(args); len(r) > maxShownArgs {
		args = string(r[:maxShownArgs]) + "…"
	}
	switch rec.State {
	case chat.ApprovalApproved:
		return fmt.Sprintf("Approved: %s %s", rec.Tool, args)
	case chat.ApprovalDenied:
		return fmt.Sprintf("Denied: %s %s", rec.Tool, args)
	case chat.ApprovalExpired:
		if rec.DecidedVia == ViaSuperseded {
			return fmt.Sprintf("Replaced by a newer request after a restart: %s %s", rec.Tool, args)
		}
		return fmt.Sprintf("Not answered in time, so not run: %s %s", rec.Tool, args)
	}
	return fmt.Sprintf("Approval needed: %s %s\nWhy: %s.\nReply yes to allow it or no to refuse.", rec.Tool, args, rec.Reason)
}

// Run expires pending requests whose deadline passed and nobody waits on
// (a turn that did not resume after a restart), at each deadline. It
// returns when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	sweep := !s.o.LeaveOverdue
	for {
		var next time.Time
		var err error
		if sweep {
			next, err = s.expireDue(ctx)
		}
		sweep = true
		if err != nil && ctx.Err() == nil {
			s.log.Warn("could not expire approval requests", "err", err)
			next = s.o.Now().Add(time.Minute)
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			timer = time.NewTimer(max(next.Sub(s.o.Now()), 0))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-s.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// expireDue expires overdue pending records and returns the next deadline
// (zero: none pending).
func (s *Service) expireDue(ctx context.Context) (time.Time, error) {
	now := s.o.Now()
	due, err := sqlite.Rows(ctx, s.o.DB, sqlite.Scan1[string], `SELECT id FROM approvals WHERE state = ? AND deadline <= ?`,
		string(chat.ApprovalPending), now.UnixMilli())
	if err != nil {
		return time.Time{}, fmt.Errorf("list overdue approvals: %w", err)
	}
	for _, id := range due {
		if _, err := s.decide(ctx, id, chat.ApprovalExpired, "timeout"); err != nil && !errors.Is(err, ErrDecided) {
			return time.Time{}, err
		}
	}
	var next sql.NullInt64
	if err := s.o.DB.QueryRowContext(ctx, `SELECT MIN(deadline) FROM approvals WHERE state = ?`,
		string(chat.ApprovalPending)).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next approval deadline: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return time.UnixMilli(next.Int64), nil
}

func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

const columns = `id, thread, channel, call_id, tool, arguments, reason, state, created_at, deadline, decided_at, decided_via`

// Get returns the record id, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (Record, error) {
	row := s.o.DB.QueryRowContext(ctx, `SELECT `+columns+` FROM approvals WHERE id = ?`, id)
	rec, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("approval request %q %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("read approval %s: %w", id, err)
	}
	return rec, nil
}

// Pending returns the pending requests of thread (every thread when
// thread is empty), oldest first.
func (s *Service) Pending(ctx context.Context, thread chat.ThreadID) ([]Record, error) {
	q := `SELECT ` + columns + ` FROM approvals WHERE state = ?`
	args := []any{string(chat.ApprovalPending)}
	if thread != "" {
		q += ` AND thread = ?`
		args = append(args, string(thread))
	}
	out, err := sqlite.Rows(ctx, s.o.DB, scan, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	return out, nil
}

// heldFor finds the request of the same call of thread (same call id,
// tool and arguments) made before a restart: pending, or answered within
// the timeout while no call waited for it. The zero Record when there is
// none.
func (s *Service) heldFor(ctx context.Context, thread chat.ThreadID, call toolloop.Call, args string) (Record, error) {
	row := s.o.DB.QueryRowContext(ctx, `SELECT `+columns+` FROM approvals
		WHERE thread = ? AND call_id = ? AND tool = ? AND arguments = ?
		  AND (state = ? OR (consumed = 0 AND state IN (?, ?) AND decided_at >= ?))
		ORDER BY created_at DESC LIMIT 1`,
		string(thread), call.ID, call.Name, args, string(chat.ApprovalPending),
		string(chat.ApprovalApproved), string(chat.ApprovalDenied), s.o.Now().Add(-s.o.Timeout).UnixMilli())
	rec, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("find pending approval: %w", err)
	}
	return rec, nil
}

func (s *Service) insert(ctx context.Context, r Record) error {
	_, err := s.o.DB.ExecContext(ctx, `INSERT INTO approvals (id, thread, channel, call_id, tool, arguments, reason, state, created_at, deadline)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, string(r.Thread), r.Channel, r.CallID, r.Tool, r.Arguments, r.Reason, string(r.State),
		r.CreatedAt.UnixMilli(), r.Deadline.UnixMilli())
	if err != nil {
		return fmt.Errorf("store approval request: %w", err)
	}
	return nil
}

func scan(row sqlite.Scanner) (Record, error) {
	var r Record
	var thread, state string
	var created, deadline int64
	var decided sql.NullInt64
	if err := row.Scan(&r.ID, &thread, &r.Channel, &r.CallID, &r.Tool, &r.Arguments, &r.Reason, &state,
		&created, &deadline, &decided, &r.DecidedVia); err != nil {
		return Record{}, err
	}
	r.Thread, r.State = chat.ThreadID(thread), chat.ApprovalState(state)
	r.CreatedAt, r.Deadline = time.UnixMilli(created), time.UnixMilli(deadline)
	if decided.Valid {
		r.DecidedAt = time.UnixMilli(decided.Int64)
	}
	return r, nil
}

func newID() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "ap_" + hex.EncodeToString(b[:])
}

var _ toolloop.Approver = (*Service)(nil)
var _ toolloop.Tainter = (*Service)(nil)

// finalURL is the address a tool result says it came from after
// redirects: an evidence packet's meta.url (fetch_url's), or the "url" of
// a result stored before results were packets.
func finalURL(content string) string {
	if p, ok := evidence.Decode(content); ok {
		return p.Meta.URL
	}
	var old struct {
		URL string `json:"url"`
	}
	if json.Unmarshal([]byte(content), &old) == nil {
		return old.URL
	}
	return ""
}

package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// routes builds the whole handler: /healthz, the API under /api/, and the
// page for everything else.
func (w *Web) routes() http.Handler {
	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", w.healthz)
	root.Handle("/api/", w.limits(w.authenticate(w.apiMux())))
	root.Handle("/", pageHandler())
	return securityHeaders(root)
}

func (w *Web) apiMux() *http.ServeMux {
	m := http.NewServeMux()
	p := api.Prefix
	m.HandleFunc("POST "+p+"/login", w.login)
	m.HandleFunc("POST "+p+"/logout", w.logout)
	m.HandleFunc("GET "+p+"/info", w.info)

	m.HandleFunc("GET "+p+"/threads", w.need("threads", w.listThreads))
	m.HandleFunc("GET "+p+"/threads/{thread}/messages", w.need("threads", w.listMessages))
	m.HandleFunc("POST "+p+"/threads/{thread}/messages", w.need("chat", w.postMessage))
	m.HandleFunc("GET "+p+"/ws", w.serveWS)
	m.HandleFunc("GET "+p+"/events", w.need("events", w.serveEvents))
	m.HandleFunc("GET "+p+"/events/recent", w.need("events", w.recentEvents))

	m.HandleFunc("GET "+p+"/interactions", w.need("interactions", w.listInteractions))
	m.HandleFunc("GET "+p+"/prompt", w.need("prompt", w.lastPrompt))
	m.HandleFunc("GET "+p+"/usage", w.need("usage", w.usage))

	m.HandleFunc("GET "+p+"/memories", w.need("memories", w.listMemories))
	m.HandleFunc("POST "+p+"/memories", w.need("memories", w.addMemory))
	m.HandleFunc("GET "+p+"/memories/{id}", w.need("memories", w.getMemory))
	m.HandleFunc("PUT "+p+"/memories/{id}", w.need("memories", w.updateMemory))
	m.HandleFunc("DELETE "+p+"/memories/{id}", w.need("memories", w.forgetMemory))

	m.HandleFunc("GET "+p+"/pulse", w.need("pulse", w.listPulse))
	m.HandleFunc("POST "+p+"/pulse", w.need("pulse", w.addPulse))
	m.HandleFunc("PUT "+p+"/pulse/{id}", w.need("pulse", w.updatePulse))
	m.HandleFunc("DELETE "+p+"/pulse/{id}", w.need("pulse", w.deletePulse))

	m.HandleFunc("GET "+p+"/skills", w.need("skills", w.listSkills))
	m.HandleFunc("GET "+p+"/skills/{name}", w.need("skills", w.getSkill))
	m.HandleFunc("PUT "+p+"/skills/{name}", w.need("skills", w.putSkill))
	m.HandleFunc("DELETE "+p+"/skills/{name}", w.need("skills", w.deleteSkill))

	m.HandleFunc("GET "+p+"/tasks", w.need("tasks", w.listTasks))
	m.HandleFunc("POST "+p+"/tasks", w.need("tasks", w.addTask))
	m.HandleFunc("GET "+p+"/tasks/{id}", w.need("tasks", w.getTask))
	m.HandleFunc("POST "+p+"/tasks/{id}/pause", w.need("tasks", w.taskAction(true)))
	m.HandleFunc("POST "+p+"/tasks/{id}/resume", w.need("tasks", w.taskAction(false)))
	m.HandleFunc("DELETE "+p+"/tasks/{id}", w.need("tasks", w.cancelTask))
	m.HandleFunc("GET "+p+"/receipts", w.need("tasks", w.listReceipts))

	m.HandleFunc("GET "+p+"/workflows", w.need("workflows", w.listWorkflows))
	m.HandleFunc("GET "+p+"/workflows/{id}", w.need("workflows", w.getWorkflow))
	m.HandleFunc("POST "+p+"/workflows/{id}/cancel", w.need("workflows", w.cancelWorkflow))

	m.HandleFunc("GET "+p+"/world", w.need("world", w.getWorld))
	m.HandleFunc("PUT "+p+"/world", w.need("world", w.putWorld))

	m.HandleFunc("GET "+p+"/history", w.need("history", w.listHistory))
	m.HandleFunc("GET "+p+"/history/{rev}", w.need("history", w.getRevision))
	m.HandleFunc("POST "+p+"/history/{rev}/restore", w.need("history", w.restoreRevision))

	m.HandleFunc("GET "+p+"/setup", w.need("setup", w.setupForms))
	m.HandleFunc("POST "+p+"/setup/{form}", w.need("setup", w.applySetup))

	m.HandleFunc("POST "+p+"/telegram/approve", w.need("pairing", w.approvePairing("telegram")))

	const fallback = "/api/"
	m.HandleFunc(fallback, func(rw http.ResponseWriter, r *http.Request) {
		// The fallback matches every method, which hides the mux's own
		// 405: ask the mux which methods the path has.
		var allow []string
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = method
			if _, pattern := m.Handler(probe); pattern != fallback {
				allow = append(allow, method)
			}
		}
		if len(allow) > 0 {
			rw.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(rw, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+strings.Join(allow, ", ")+")")
			return
		}
		writeError(rw, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return m
}

// features are the optional services an agent may provide, by the name
// GET /info reports them under. Their routes are registered through need.
var features = map[string]func(*api.Services) bool{
	"chat":         func(s *api.Services) bool { return s.Chat != nil },
	"threads":      func(s *api.Services) bool { return s.Threads != nil },
	"memories":     func(s *api.Services) bool { return s.Memories != nil },
	"pulse":        func(s *api.Services) bool { return s.Pulse != nil },
	"skills":       func(s *api.Services) bool { return s.Skills != nil },
	"tasks":        func(s *api.Services) bool { return s.Tasks != nil },
	"workflows":    func(s *api.Services) bool { return s.Workflows != nil },
	"interactions": func(s *api.Services) bool { return s.Interactions != nil },
	"usage":        func(s *api.Services) bool { return s.Usage != nil },
	"events":       func(s *api.Services) bool { return s.Events != nil },
	"prompt":       func(s *api.Services) bool { return s.Prompt != nil },
	"world":        func(s *api.Services) bool { return s.World != nil },
	"setup":        func(s *api.Services) bool { return s.Setup != nil },
	"history":      func(s *api.Services) bool { return s.History != nil },
	"pairing":      func(s *api.Services) bool { return s.Pairing != nil },
}

// need serves h while the agent provides feature (checked per request: the
// services may be filled in after the routes are built) and answers 501
// "<feature> is not enabled" otherwise, so handlers use the service
// without a nil check.
func (w *Web) need(feature string, h http.HandlerFunc) http.HandlerFunc {
	on, ok := features[feature]
	if !ok {
		panic("web: unknown feature " + feature)
	}
	return func(rw http.ResponseWriter, r *http.Request) {
		if !on(w.svc) {
			notEnabled(rw, feature)
			return
		}
		h(rw, r)
	}
}

// securityHeaders sets the headers every answer carries. No CORS header is
// ever set: other origins cannot read answers.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(rw, r)
	})
}

// limits applies the per-client rate limit and the body size limit.
func (w *Web) limits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Cache-Control", "no-store")
		if ok, wait := w.limit.allow(clientIP(r)); !ok {
			rw.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
			writeError(rw, http.StatusTooManyRequests, "too many requests; slow down")
			return
		}
		if r.ContentLength > w.cfg.MaxBodyBytes {
			writeError(rw, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body too large (limit %d bytes)", w.cfg.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(rw, r.Body, w.cfg.MaxBodyBytes)
		next.ServeHTTP(rw, r)
	})
}

// authenticate lets through requests with the token or the session cookie
// (and /login, which checks the token itself).
func (w *Web) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.Prefix+"/login" {
			next.ServeHTTP(rw, r)
			return
		}
		switch w.auth.check(r) {
		case authFailed:
			unauthorized(rw)
			return
		case authCookie:
			unsafe := r.Method != http.MethodGet && r.Method != http.MethodHead
			if (unsafe || isUpgrade(r)) && !sameOrigin(r, publicHost(w.cfg.PublicURL)) {
				writeError(rw, http.StatusForbidden, "cross-origin request refused")
				return
			}
		}
		next.ServeHTTP(rw, r)
	})
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func (w *Web) healthz(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Cache-Control", "no-store")
	if !w.ready.Load() {
		writeJSON(rw, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(rw, http.StatusOK, health{Status: "ok", Instance: w.svc.Instance})
}

// health is the body of GET /healthz once ready: the status, and the
// agent's instance id (api.Services.Instance) so that the supervisor knows
// it reached its own child.
type health struct {
	Status   string `json:"status"`
	Instance string `json:"instance,omitempty"`
}

func (w *Web) login(rw http.ResponseWriter, r *http.Request) {
	var req api.LoginRequest
	if err := decodeBody(r, &req); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	if !sameOrigin(r, publicHost(w.cfg.PublicURL)) {
		writeError(rw, http.StatusForbidden, "cross-origin request refused")
		return
	}
	if !w.auth.none && !w.auth.tokenOK(req.Token) {
		unauthorized(rw)
		return
	}
	if !w.auth.none {
		http.SetCookie(rw, w.auth.sessionCookie(r, false))
	}
	rw.WriteHeader(http.StatusNoContent)
}

func (w *Web) logout(rw http.ResponseWriter, r *http.Request) {
	if !w.auth.none {
		http.SetCookie(rw, w.auth.sessionCookie(r, true))
	}
	rw.WriteHeader(http.StatusNoContent)
}

func (w *Web) info(rw http.ResponseWriter, r *http.Request) {
	var out api.AgentInfo
	if s := w.svc.Info; s != nil {
		var err error
		if out, err = s.Info(r.Context()); err != nil {
			w.serviceError(rw, r, err)
			return
		}
	}
	out.Auth = AuthToken
	if w.auth.none {
		out.Auth = AuthNone
	}
	out.PanelURL = w.PanelURL()
	out.Features = make(map[string]bool, len(features))
	for name, on := range features {
		out.Features[name] = on(w.svc)
	}
	if out.Commands == nil {
		out.Commands = []api.Command{}
	}
	writeJSON(rw, http.StatusOK, out)
}

// threadParam reads and validates the {thread} path value.
func threadParam(r *http.Request) (chat.ThreadID, error) {
	t := chat.ThreadID(r.PathValue("thread"))
	if err := t.Validate(); err != nil {
		return "", fmt.Errorf("%w: %v", api.ErrInvalid, err)
	}
	return t, nil
}

func (w *Web) listThreads(rw http.ResponseWriter, r *http.Request) {
	q := query{r: r}
	tq := api.ThreadQuery{IncludeSubSessions: q.bool("include_sub_sessions"), Limit: int(q.int("limit", 100, 1, 1000))}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	ts, err := w.svc.Threads.List(r.Context(), tq)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, api.ThreadList{Threads: nonNil(ts)})
}

func (w *Web) listMessages(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	q := query{r: r}
	mq := api.MessageQuery{
		AfterID:         q.int("after_id", 0, 0, 1<<62),
		Limit:           int(q.int("limit", 200, 1, 1000)),
		IncludeArchived: q.bool("include_archived"),
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	ms, err := w.svc.Threads.Messages(r.Context(), t, mq)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, api.MessageList{Messages: nonNil(ms)})
}

func (w *Web) postMessage(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	var req api.SendRequest
	if err := decodeBody(r, &req); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		writeError(rw, http.StatusBadRequest, "text is empty")
		return
	}
	// The turn may take longer than an ordinary request may.
	_ = http.NewResponseController(rw).SetWriteDeadline(time.Now().Add(w.cfg.TurnTimeout + 10*time.Second))
	ctx, cancel := context.WithTimeout(r.Context(), w.cfg.TurnTimeout)
	defer cancel()
	channel := t.Channel()
	reply, err := w.svc.Chat.Handle(ctx, chat.Inbound{
		Address:  chat.Address{Channel: channel, Thread: t},
		Sender:   chat.Sender{ID: "api", DisplayName: "HTTP API"},
		Text:     req.Text,
		Received: w.now(),
	})
	reply.Thread = t
	if reply.ToolCalls == nil {
		reply.ToolCalls = []api.ToolCall{}
	}
	switch {
	case err == nil:
		writeJSON(rw, http.StatusOK, reply)
	case api.IsDiskFull(err):
		w.serviceError(rw, r, err)
	case errors.Is(err, api.ErrTurnFailed):
		reply.Error = err.Error()
		writeJSON(rw, http.StatusBadGateway, reply)
	case r.Context().Err() != nil:
		// The client went away; the turn still completes and is stored.
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		writeError(rw, http.StatusGatewayTimeout, "the turn is taking too long; its reply will be in the thread's history")
	default:
		w.serviceError(rw, r, err)
	}
}

func (w *Web) listInteractions(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Interactions
	q := query{r: r}
	iq := api.InteractionQuery{
		Action:   q.str("action"),
		Thread:   chat.ThreadID(q.str("thread")),
		Since:    q.time("since"),
		BeforeID: q.int("before_id", 0, 0, 1<<62),
		Limit:    int(q.int("limit", 100, 1, 1000)),
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	list, err := s.List(r.Context(), iq)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, api.InteractionList{Interactions: nonNil(list), Actions: nonNil(s.Actions())})
}

func (w *Web) lastPrompt(rw http.ResponseWriter, r *http.Request) {
	p, err := w.svc.Prompt.LastPrompt(r.Context(), chat.ThreadID(r.URL.Query().Get("thread")))
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, p)
}

func (w *Web) usage(rw http.ResponseWriter, r *http.Request) {
	q := query{r: r}
	from, to := q.day("from"), q.day("to")
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	if from == "" && to == "" {
		from = w.now().UTC().AddDate(0, 0, -30).Format(time.DateOnly)
	}
	rows, err := w.svc.Usage.Usage(r.Context(), from, to)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, api.UsageList{Usage: nonNil(rows)})
}

func (w *Web) recentEvents(rw http.ResponseWriter, r *http.Request) {
	q := query{r: r}
	prefix := q.str("topic")
	after := q.int("after_id", 0, 0, 1<<62)
	limit := int(q.int("limit", 100, 1, 1000))
	last := int(q.int("last", 0, 0, 1000))
	if q.err == nil {
		q.err = checkPrefix(prefix)
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	var (
		evs []extension.Event
		err error
	)
	if last > 0 {
		evs, err = w.svc.Events.Last(r.Context(), prefix, last)
	} else {
		evs, err = w.svc.Events.Recent(r.Context(), prefix, after, limit)
	}
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	out := api.EventList{Events: make([]api.Event, len(evs))}
	for i, ev := range evs {
		out.Events[i] = api.EventOf(ev)
		if len(out.Events[i].Payload) == 0 {
			out.Events[i].Payload = json.RawMessage("null")
		}
	}
	writeJSON(rw, http.StatusOK, out)
}

// checkPrefix validates a topic prefix filter as the event bus does: at
// most 128 bytes of UTF-8 without spaces or control characters.
func checkPrefix(p string) error {
	if len(p) > 128 {
		return fmt.Errorf("%w: topic filter longer than 128 bytes", api.ErrInvalid)
	}
	if !utf8.ValidString(p) || strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%w: topic filter %q contains a space, control character or invalid UTF-8", api.ErrInvalid, p)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
	// /healthz is outside the Host check (see checkHost).
	root.HandleFunc("GET /healthz", w.healthz)
	// The API's mux (60-odd patterns, each checked against the others) is
	// built by the first API request rather than on the start's path.
	apiMux := sync.OnceValue(w.apiMux)
	root.Handle("/api/", w.guard(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		apiMux().ServeHTTP(rw, r)
	})))
	root.Handle("/", w.endpointOr(pageHandler()))
	return securityHeaders(w.checkHost(root))
}

// endpointOr serves the extensions' own endpoints (MCP's /mcp) behind the
// API's checks (guard: token, rate limit, cross-site, JSON body, size), and
// next for every other path.
func (w *Web) endpointOr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if e := w.svc.Endpoints; e != nil {
			if h, ok := e.Endpoint(r.URL.Path); ok {
				w.guard(h).ServeHTTP(rw, r)
				return
			}
		}
		next.ServeHTTP(rw, r)
	})
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
	m.HandleFunc("POST "+p+"/threads/{thread}/attachments", w.need("chat", w.uploadAttachment))
	m.HandleFunc("GET "+p+"/threads/{thread}/speech/{file}", w.need("chat", w.getSpeech))
	m.HandleFunc("GET "+p+"/threads/{thread}/model", w.need("models", w.threadModel))
	m.HandleFunc("PUT "+p+"/threads/{thread}/model", w.need("models", w.setThreadModel))
	m.HandleFunc("GET "+p+"/models", w.need("models", w.listModels))
	m.HandleFunc("PUT "+p+"/threads/{thread}", w.need("conversations", w.renameThread))
	m.HandleFunc("DELETE "+p+"/threads/{thread}", w.need("conversations", w.archiveThread))
	m.HandleFunc("POST "+p+"/threads/{thread}/restore", w.need("conversations", w.restoreThread))
	m.HandleFunc("POST "+p+"/threads/{thread}/regenerate", w.need("conversations", w.redo(api.RedoRegenerate)))
	m.HandleFunc("POST "+p+"/threads/{thread}/retry", w.need("conversations", w.redo(api.RedoRetry)))
	m.HandleFunc("POST "+p+"/threads/{thread}/messages/{id}/edit", w.need("conversations", w.redo(api.RedoEdit)))
	m.HandleFunc("GET "+p+"/segments", w.need("conversations", w.listSegments))
	m.HandleFunc("GET "+p+"/segments/{id}", w.need("conversations", w.getSegment))
	m.HandleFunc("GET "+p+"/search", w.need("conversations", w.search))
	m.HandleFunc("GET "+p+"/ws", w.serveWS)
	m.HandleFunc("GET "+p+"/events", w.need("events", w.serveEvents))
	m.HandleFunc("GET "+p+"/events/recent", w.need("events", w.recentEvents))

	m.HandleFunc("GET "+p+"/interactions", w.need("interactions", w.listInteractions))
	m.HandleFunc("GET "+p+"/prompt", w.need("prompt", w.lastPrompt))
	m.HandleFunc("GET "+p+"/status/project", w.need("project", w.projectStatus))
	m.HandleFunc("GET "+p+"/usage", w.need("usage", w.usage))

	m.HandleFunc("GET "+p+"/memories", w.need("memories", w.listMemories))
	m.HandleFunc("POST "+p+"/memories", w.need("memories", w.addMemory))
	m.HandleFunc("GET "+p+"/memories/{id}", w.need("memories", w.getMemory))
	m.HandleFunc("PUT "+p+"/memories/{id}", w.need("memories", w.updateMemory))
	m.HandleFunc("DELETE "+p+"/memories/{id}", w.need("memories", w.forgetMemory))
	m.HandleFunc("GET "+p+"/memories/{id}/history", w.need("memories", w.memoryHistory))

	m.HandleFunc("GET "+p+"/dreams", w.need("dreams", w.listDreams))
	m.HandleFunc("POST "+p+"/dreams", w.need("dreams", w.dreamNow))
	m.HandleFunc("POST "+p+"/dreams/{id}/revert", w.need("dreams", w.revertDream))

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

	m.HandleFunc("GET "+p+"/approvals", w.need("approvals", w.listApprovals))
	m.HandleFunc("POST "+p+"/approvals/{id}", w.need("approvals", tokenOnly(approvalNeedsToken, w.answerApproval)))

	m.HandleFunc("GET "+p+"/setup", w.need("setup", w.setupForms))
	m.HandleFunc("POST "+p+"/setup/{form}", w.need("setup", tokenOnly(setupNeedsToken, w.applySetup)))

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
	"chat":          func(s *api.Services) bool { return s.Chat != nil },
	"threads":       func(s *api.Services) bool { return s.Threads != nil },
	"conversations": func(s *api.Services) bool { return s.Conversations != nil },
	"memories":      func(s *api.Services) bool { return s.Memories != nil },
	"pulse":         func(s *api.Services) bool { return s.Pulse != nil },
	"skills":        func(s *api.Services) bool { return s.Skills != nil },
	"tasks":         func(s *api.Services) bool { return s.Tasks != nil },
	"workflows":     func(s *api.Services) bool { return s.Workflows != nil },
	"interactions":  func(s *api.Services) bool { return s.Interactions != nil },
	"usage":         func(s *api.Services) bool { return s.Usage != nil },
	"events":        func(s *api.Services) bool { return s.Events != nil },
	"prompt":        func(s *api.Services) bool { return s.Prompt != nil },
	"project":       func(s *api.Services) bool { return s.Project != nil },
	"world":         func(s *api.Services) bool { return s.World != nil },
	"setup":         func(s *api.Services) bool { return s.Setup != nil },
	"history":       func(s *api.Services) bool { return s.History != nil },
	"pairing":       func(s *api.Services) bool { return s.Pairing != nil },
	"approvals":     func(s *api.Services) bool { return s.Approvals != nil },
	"models":        func(s *api.Services) bool { return s.Models != nil },
	"dreams":        func(s *api.Services) bool { return s.Dreams != nil },
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

// checkHost answers 421 for a Host header that is not this server's
// address (DNS rebinding), except on /healthz: probes (the supervisor, a
// container runtime) may name the server however they reach it, and it
// tells nothing.
func (w *Web) checkHost(next *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// The control socket has no Host check (control.go).
		if r.URL.Path != "/healthz" && !viaControl(r) && !w.hostAllowed(r.Host) {
			misdirected(rw, r.Host)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// authKey is the request context key of the request's authKind.
type authKey struct{}

// guard runs the checks of every API request, in this order (docs/api.md):
// authentication (a failure spends the client's failed-authentication
// budget, never the rate limit of the requests that authenticated), the
// per-client rate limit, the cross-site check of writes and WebSocket
// upgrades (403), the JSON body check (415) and the body size limit (413).
func (w *Web) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Cache-Control", "no-store")
		key := clientKey(r)
		login := r.URL.Path == api.Prefix+"/login"
		kind := w.auth.check(r)
		if viaControl(r) {
			// The control token, from a peer of the agent's uid.
			key, kind = "control socket", w.ctl.check(r)
		}
		// While a client's failures are over the limit a wrong token gets
		// 429; valid credentials (token or session cookie) always pass,
		// so that strangers sharing the owner's address (a NAT, a proxy)
		// cannot lock the owner out. Guessing is bounded by the token's
		// strength (256 random bits generated; at least 16 characters
		// configured). The sign-in's token is checked by login.
		if !kind.withToken() && presentsToken(r) && w.failed.exhausted(key) {
			tooMany(rw, time.Minute)
			return
		}
		if kind == authFailed && !login {
			w.authFailed(rw, key)
			return
		}
		// Requests with the token have their own bucket per address:
		// with web.auth: none, anonymous requests from the same address
		// do not spend it either.
		limitKey := key
		if kind.withToken() {
			limitKey = "token " + key
		}
		if ok, wait := w.limit.allow(limitKey); !ok {
			tooMany(rw, wait)
			return
		}
		if unsafeMethod(r) || isUpgrade(r) {
			if why := crossSite(r, publicHost(w.cfg.PublicURL)); why != "" {
				writeError(rw, http.StatusForbidden, "cross-site request refused ("+why+")")
				return
			}
			// The cookie, and the sign-in that sets it, count only when
			// a browser says the request comes from the page.
			if (kind == authCookie || login) && !browserVouched(r) {
				writeError(rw, http.StatusForbidden,
					"request refused: a browser request needs an Origin header or Sec-Fetch-Site: same-origin")
				return
			}
		}
		if unsafeMethod(r) && !jsonBody(r) {
			writeError(rw, http.StatusUnsupportedMediaType, "a request body must be JSON sent as Content-Type: application/json")
			return
		}
		limit := w.cfg.MaxBodyBytes
		if isUpload(r) {
			limit = max(limit, w.uploadBodyLimit()) // a base64 file (attachments.go)
		}
		if r.ContentLength > limit {
			writeError(rw, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("request body too large (limit %d bytes)", limit))
			return
		}
		r.Body = http.MaxBytesReader(rw, r.Body, limit)
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), authKey{}, kind)))
	})
}

// authFailed spends a failed-authentication token of key and answers 401,
// or 429 once there is none left.
func (w *Web) authFailed(rw http.ResponseWriter, key string) {
	if ok, wait := w.failed.allow(key); !ok {
		tooMany(rw, wait)
		return
	}
	unauthorized(rw)
}

func tooMany(rw http.ResponseWriter, wait time.Duration) {
	rw.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
	writeError(rw, http.StatusTooManyRequests, "too many requests; slow down")
}

// authOf is how the request was authenticated (set by guard).
func authOf(r *http.Request) authKind {
	k, _ := r.Context().Value(authKey{}).(authKind)
	return k
}

// tokenOnly serves h only to requests that carry the token (bearer or
// session cookie), also with web.auth: none, and answers others 401 with
// refusal: the setup form chooses the model and its server, and an
// approval lets a held call run, so a page or a local process (a sandboxed
// command) that reaches an open port must not.
func tokenOnly(refusal string, h http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		if !authOf(r).withToken() {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="reverie"`)
			writeError(rw, http.StatusUnauthorized, refusal)
			return
		}
		h(rw, r)
	}
}

// setupNeedsToken refuses a setup write without the token.
const setupNeedsToken = "changing the setup needs the access token, also with web.auth: none: " +
	"sign in with the token kept in " + TokenFile + " in the data dir"

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

// login checks the token and opens a session: the cookie it sets is what
// the page's WebSocket and event stream carry. With web.auth: none it
// opens one too (the setup form needs it).
func (w *Web) login(rw http.ResponseWriter, r *http.Request) {
	var req api.LoginRequest
	if err := decodeBody(r, &req); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	if !w.auth.tokenOK(req.Token) {
		w.authFailed(rw, clientKey(r))
		return
	}
	id, err := w.auth.sessions.create(r.Context())
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	http.SetCookie(rw, sessionCookie(r, id))
	rw.WriteHeader(http.StatusNoContent)
}

// logout ends the request's session (server-side: the cookie stops
// working everywhere, also where it was copied), closes the WebSocket
// connections and event streams it opened and clears the cookie.
func (w *Web) logout(rw http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if err := w.auth.sessions.revoke(r.Context(), c.Value); err != nil {
			w.serviceError(rw, r, err)
			return
		}
		w.hub.endSession(sessionSum(c.Value))
	}
	http.SetCookie(rw, sessionCookie(r, ""))
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
	tq := api.ThreadQuery{IncludeSubSessions: q.bool("include_sub_sessions"), Limit: int(q.int("limit", 100, 1, 1000)), Archived: q.bool("archived")}
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
	// The same threads as the WebSocket: web:<session> (or <session>);
	// over the control socket any thread, as `reverie send` in process.
	t, err := webThread(r.PathValue("thread"))
	sender := "api"
	if viaControl(r) {
		t, err, sender = chat.ThreadID(r.PathValue("thread")), nil, "cli"
		if verr := t.Validate(); verr != nil {
			err = verr
		}
	}
	if err != nil {
		w.serviceError(rw, r, fmt.Errorf("%w: %v", api.ErrInvalid, err))
		return
	}
	var req api.SendRequest
	if err := decodeBody(r, &req); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	notes, images, err := w.inbound(t, req.Attachments)
	if err != nil {
		w.serviceError(rw, r, fmt.Errorf("%w: %w", api.ErrInvalid, err))
		return
	}
	text := withNotes(notes, req.Text)
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		writeError(rw, http.StatusBadRequest, "text is empty")
		return
	}
	channel := t.Channel()
	// A web thread's turn is also streamed to the pages following it, as
	// for a message typed in one of them; another channel's thread (over
	// the control socket) gets the reply only here.
	run := w.svc.Chat.Handle
	if channel == ChannelName {
		run = w.svc.Chat.Post
	}
	w.runTurn(rw, r, t, func(ctx context.Context) (api.Reply, error) {
		return run(ctx, chat.Inbound{
			Address:     chat.Address{Channel: channel, Thread: t},
			Sender:      w.sender(ctx, sender),
			Text:        text,
			Attachments: images,
			Received:    w.now(),
		})
	})
}

// runTurn runs a synchronous turn (a message, a regeneration, a retry, an
// edit) and answers its Reply: 200, or 502 with the Reply and the error
// when the turn failed, 504 when it takes longer than web.turn_timeout.
func (w *Web) runTurn(rw http.ResponseWriter, r *http.Request, t chat.ThreadID, run func(ctx context.Context) (api.Reply, error)) {
	// The turn may take longer than an ordinary request may.
	_ = http.NewResponseController(rw).SetWriteDeadline(time.Now().Add(w.cfg.TurnTimeout + 10*time.Second))
	ctx, cancel := context.WithTimeout(r.Context(), w.cfg.TurnTimeout)
	defer cancel()
	reply, err := run(ctx)
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
		reply.Reply, reply.Error = w.host.Redact(reply.Reply), w.host.Redact(err.Error())
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

func (w *Web) projectStatus(rw http.ResponseWriter, r *http.Request) {
	st, err := w.svc.Project.Status(r.Context(), chat.ThreadID(r.URL.Query().Get("thread")))
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, st)
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

package web

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
)

// Event stream settings.
const (
	// keepAliveInterval is how often an idle stream gets a comment line.
	keepAliveInterval = 15 * time.Second
	// watchBuffer is how many live events may wait for a slow client before
	// they are dropped for it.
	watchBuffer = 1024
	// maxReplay bounds the stored events replayed after Last-Event-ID.
	maxReplay = 1000
	// sseWriteTimeout bounds writing to a stream client.
	sseWriteTimeout = 30 * time.Second
)

// serveEvents streams the event bus as Server-Sent Events (docs/api.md).
func (w *Web) serveEvents(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Events
	q := query{r: r}
	prefix := q.str("topic")
	last := q.int("after", 0, 0, 1<<62)
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		n, err := strconv.ParseInt(h, 10, 64)
		if err != nil || n < 0 {
			q.fail("Last-Event-ID must be an event id")
		}
		last = max(last, n)
	}
	if q.err == nil {
		q.err = checkPrefix(prefix)
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	if !w.acquireStream() {
		writeError(rw, http.StatusServiceUnavailable, "too many open connections")
		return
	}
	defer w.releaseStream()

	ctx := r.Context()
	// A stream opened with the session cookie ends with the session
	// (POST /logout); nil (never ready) otherwise.
	var sessionEnded <-chan struct{}
	if authOf(r) == authCookie {
		if ck, err := r.Cookie(SessionCookie); err == nil {
			sessionEnded = w.auth.sessions.ended(ck.Value)
		}
	}
	// Watch first, so nothing published during the replay is missed; the
	// ids then skip what the replay already sent.
	live := s.Watch(ctx, prefix, watchBuffer)
	var replay []extension.Event
	if last > 0 {
		var err error
		if replay, err = s.Recent(ctx, prefix, last, maxReplay); err != nil {
			w.serviceError(rw, r, err)
			return
		}
	}

	rc := http.NewResponseController(rw)
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rw.WriteHeader(http.StatusOK)
	out := bufio.NewWriterSize(rw, 4096)
	flush := func() bool {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		return out.Flush() == nil && rc.Flush() == nil
	}
	_, _ = out.WriteString("retry: 3000\n\n")
	for _, ev := range replay {
		writeEvent(out, ev)
		last = ev.ID
	}
	if !flush() {
		return
	}
	tick := time.NewTicker(keepAliveInterval)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-live:
			if !ok {
				return
			}
			if ev.ID <= last {
				continue
			}
			writeEvent(out, ev)
			last = ev.ID
			// Batch what is already waiting into one flush.
			for more := true; more; {
				select {
				case ev, ok := <-live:
					if !ok {
						flush()
						return
					}
					if ev.ID > last {
						writeEvent(out, ev)
						last = ev.ID
					}
				default:
					more = false
				}
			}
			if !flush() {
				return
			}
		case <-tick.C:
			_, _ = out.WriteString(": keep-alive\n\n")
			if !flush() {
				return
			}
		case <-w.stopping:
			return
		case <-sessionEnded:
			return
		case <-ctx.Done():
			return
		}
	}
}

func writeEvent(out *bufio.Writer, bev extension.Event) {
	ev := api.EventOf(bev)
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage("null")
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	_, _ = out.WriteString("id: ")
	_, _ = out.WriteString(strconv.FormatInt(ev.ID, 10))
	_, _ = out.WriteString("\ndata: ")
	_, _ = out.Write(b)
	_, _ = out.WriteString("\n\n")
}

package workflow

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reverie-ai/reverie/llm"
)

// Payloads of the bus events.
type sessionPayload struct {
	Session    string `json:"session_id"`
	Workflow   string `json:"workflow_id"`
	Parent     string `json:"parent,omitempty"`
	RootThread string `json:"root_thread,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	Objective  string `json:"objective"`
	Mode       string `json:"mode"`
	Depth      int    `json:"depth"`
	Hop        int    `json:"hop"`
	State      State  `json:"state"`
	Error      string `json:"error,omitempty"`
	// ContinuedBy names the continuation spawned after a timeout.
	ContinuedBy string   `json:"continued_by,omitempty"`
	DurationMS  int64    `json:"duration_ms,omitempty"`
	ToolCalls   int      `json:"tool_calls,omitempty"`
	Skills      []string `json:"skills_loaded,omitempty"`
	Verdict     string   `json:"supervisor_verdict,omitempty"`
}

type workflowPayload struct {
	Workflow   string   `json:"workflow_id"`
	RootThread string   `json:"root_thread,omitempty"`
	MergedFrom []string `json:"merged_from,omitempty"`
	State      State    `json:"state,omitempty"`
	Nodes      int      `json:"nodes,omitempty"`
}

func (m *Manager) payload(n *node) sessionPayload {
	p := sessionPayload{
		Session: n.id, Workflow: n.workflow, Parent: string(n.parent), RootThread: string(n.root), TaskID: n.taskID,
		Objective: n.objective, Mode: string(n.mode), Depth: n.depth, Hop: n.hop, State: n.state, Error: n.errText,
		ContinuedBy: n.continuedBy, ToolCalls: n.toolCalls, Verdict: n.verdict,
	}
	if !n.startedAt.IsZero() && !n.finishedAt.IsZero() {
		p.DurationMS = n.finishedAt.Sub(n.startedAt).Milliseconds()
	}
	return p
}

// evaluateLocked decides what a pending node waits for: a dependency
// that is not done, its time gate, or a worker slot. A dependency that
// failed (or was cancelled) fails the node and its dependents.
func (m *Manager) evaluateLocked(ctx context.Context, n *node, b *batch, fx *effects) {
	if n.state != StatePending || n.waiting == waitNotBefore || n.waiting == waitConcurrency {
		return
	}
	for _, d := range n.deps {
		dn := m.finalLocked(ctx, d)
		switch {
		case dn == nil:
			// The dependency vanished from the database: treat it as
			// failed rather than wait forever.
			m.failWaveLocked(ctx, n, fmt.Sprintf("dependency %s no longer exists", d), b, fx)
			return
		case dn.state == StateCompleted:
			continue
		case dn.state.Terminal():
			m.failWaveLocked(ctx, n, fmt.Sprintf("dependency %s %s", d, failureWords(dn)), b, fx)
			return
		default:
			n.waiting = waitDeps
			return
		}
	}
	if !n.notBefore.IsZero() && m.now().Before(n.notBefore) {
		n.waiting = waitNotBefore
		heap.Push(&m.gates, gate{at: n.notBefore, id: n.id})
		fx.wake = true
		return
	}
	n.waiting = waitConcurrency
	m.ready = append(m.ready, n.id)
	fx.wake = true
}

// failureWords describes a failed dependency: "failed: …", "was
// cancelled", "timed out".
func failureWords(n *node) string {
	switch n.state {
	case StateCancelled:
		return "was cancelled"
	case StateTimeout:
		return "timed out"
	}
	if n.errText != "" {
		return "failed: " + n.errText
	}
	return "failed"
}

// finishLocked moves n to a terminal state and records it.
func (m *Manager) finishLocked(n *node, st State, errText string, b *batch, fx *effects) {
	n.state, n.errText, n.waiting = st, errText, ""
	n.finishedAt = m.now()
	if n.parent == "" || (n.root == "" && n.parent.IsSubSession()) {
		n.delivered = true // fire-and-forget: nothing to deliver
	}
	b.updateNode(n)
	if !n.startedAt.IsZero() {
		m.recordOutcomeLocked(n, b)
	}
	topic := TopicCompleted
	switch st {
	case StateFailed:
		topic = TopicFailed
	case StateTimeout:
		topic = TopicTimeout
	case StateCancelled:
		topic = TopicCancelled
	}
	fx.publish(topic, m.payload(n))
}

// dependentsLocked are the pending sessions waiting on n or on any earlier
// hop of its continuation chain.
func (m *Manager) dependentsLocked(ctx context.Context, n *node) []*node {
	var out []*node
	for cur, i := n, 0; cur != nil && i < 64; i++ {
		for _, id := range cur.dependents {
			if d := m.nodes[id]; d != nil && d.state == StatePending && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
		if cur.continuation == "" {
			break
		}
		cur = m.lookupLocked(ctx, cur.continuation)
	}
	return out
}

// completeLocked records a successful run and starts what it unblocks.
func (m *Manager) completeLocked(ctx context.Context, n *node, result string, b *batch, fx *effects) {
	n.result = result
	m.finishLocked(n, StateCompleted, "", b, fx)
	m.planDeliveriesLocked(ctx, []*node{n}, b, fx)
	for _, d := range m.dependentsLocked(ctx, n) {
		m.evaluateLocked(ctx, d, b, fx)
	}
}

// failWaveLocked fails n (state failed unless it is already terminal)
// and, transitively, every session depending on it, then plans the
// deliveries of the wave.
func (m *Manager) failWaveLocked(ctx context.Context, n *node, reason string, b *batch, fx *effects) {
	if !n.state.Terminal() {
		m.finishLocked(n, StateFailed, reason, b, fx)
	}
	wave := []*node{n}
	for i := 0; i < len(wave); i++ {
		for _, d := range m.dependentsLocked(ctx, wave[i]) {
			m.finishLocked(d, StateFailed, fmt.Sprintf("dependency %s %s", wave[i].id, failureWords(wave[i])), b, fx)
			wave = append(wave, d)
		}
	}
	m.planDeliveriesLocked(ctx, wave, b, fx)
}

// continueLocked handles a timeout: a continuation session picks up the
// saved messages, or, after MaxContinuations hops, n fails.
func (m *Manager) continueLocked(ctx context.Context, n *node, b *batch, fx *effects) {
	if n.hop >= m.o.MaxContinuations {
		reason := fmt.Sprintf("timed out after %s on continuation %d of %d; giving up", n.timeout, n.hop, m.o.MaxContinuations)
		if m.o.MaxContinuations == 0 {
			reason = fmt.Sprintf("timed out after %s (continuations are disabled)", n.timeout)
		}
		n.outcome = StateTimeout
		m.failWaveLocked(ctx, n, reason, b, fx)
		return
	}
	now := m.now()
	c := &node{
		id: newID(SessionPrefix), workflow: n.workflow, parent: n.parent, lineage: n.lineage, root: n.root, depth: n.depth,
		objective: n.objective, context: n.context, mode: n.mode, profile: n.profile, toolNames: n.toolNames,
		deps: slices.Clone(n.deps), timeout: n.timeout, taskID: n.taskID, hop: n.hop + 1, continuation: n.id,
		feedback: n.feedback, maxRounds: n.maxRounds, taint: n.taint, createdAt: now, state: StatePending,
	}
	n.continuedBy = c.id
	n.delivered = true // superseded: its continuation reports
	m.finishLocked(n, StateTimeout, fmt.Sprintf("timed out after %s; continued as %s", n.timeout, c.id), b, fx)
	b.insertNode(c)
	b.add(`INSERT INTO workflow_messages (node_id, seq, message) SELECT ?, seq, message FROM workflow_messages WHERE node_id = ?`, c.id, n.id)
	b.appendNote(c.id, llm.UserText(fmt.Sprintf(continueNote, n.id, n.timeout, c.hop, m.o.MaxContinuations)))
	if w := m.wfs[n.workflow]; w != nil {
		w.nodes = append(w.nodes, c.id)
	}
	m.nodes[c.id] = c
	m.indexLocked(c)
	m.log.Info("sub-session timed out; continuing", "session", n.id, "continuation", c.id, "hop", c.hop)
	m.evaluateLocked(ctx, c, b, fx)
}

const continueNote = "[SYSTEM EVENT] The previous worker on this task (%s) ran out of time after %s. You are continuation %d of at most %d and have the same time again. Continue exactly where it stopped: do not repeat finished steps, finish the task, and reply with the final report."

const resumeNote = "[SYSTEM EVENT] The assistant restarted while you were working on this task. Continue exactly where you stopped: do not repeat finished steps, finish the task, and reply with the final report."

// cancelLocked cancels n (pending or running), its continuation and the
// sessions it spawned; with propagate, what depends on them fails.
func (m *Manager) cancelLocked(ctx context.Context, n *node, reason string, propagate bool, b *batch, fx *effects, out *[]string) {
	n = m.finalLocked(ctx, n.id)
	if n == nil || n.state.Terminal() {
		return
	}
	if n.cancel != nil {
		n.cancel(errCancelled)
	}
	n.delivered = true // cancelled on purpose: nothing to report
	m.finishLocked(n, StateCancelled, reason, b, fx)
	*out = append(*out, n.id)
	for _, hop := range m.chainLocked(ctx, n) {
		for _, kid := range m.children[hop.id] {
			if k := m.nodes[kid]; k != nil {
				m.cancelLocked(ctx, k, "its parent "+n.id+" was cancelled", propagate, b, fx, out)
			}
		}
	}
	if propagate {
		m.failWaveLocked(ctx, n, reason, b, fx)
	} else {
		m.planDeliveriesLocked(ctx, []*node{n}, b, fx)
	}
}

// chainLocked is n's continuation chain, first hop first.
func (m *Manager) chainLocked(ctx context.Context, n *node) []*node {
	first := n
	for i := 0; first.continuation != "" && i < 64; i++ {
		prev := m.lookupLocked(ctx, first.continuation)
		if prev == nil {
			break
		}
		first = prev
	}
	chain := []*node{first}
	for i := 0; chain[len(chain)-1].continuedBy != "" && i < 64; i++ {
		next := m.lookupLocked(ctx, chain[len(chain)-1].continuedBy)
		if next == nil {
			break
		}
		chain = append(chain, next)
	}
	return chain
}

var errCancelled = errors.New("sub-session cancelled")

// Cancel cancels a sub-session (sub_…) or a whole workflow (wf_…): pending
// sessions never start, running ones are stopped, sessions they spawned are
// cancelled too, and sessions depending on them fail. It returns the ids
// of the sessions it cancelled.
func (m *Manager) Cancel(ctx context.Context, id, reason string) ([]string, error) {
	if reason == "" {
		reason = "cancelled"
	}
	m.mu.Lock()
	var b batch
	var fx effects
	var out []string
	var err error
	switch {
	case len(id) > len(WorkflowPrefix) && id[:len(WorkflowPrefix)] == WorkflowPrefix:
		var wfID string
		wfID, err = resolveWorkflowID(ctx, m.o.DB, id)
		if err == nil {
			var w *wf
			if w, err = m.loadWorkflowLocked(ctx, wfID); err == nil {
				// The whole workflow goes: nothing in it is failed
				// as a dependent of something cancelled.
				for _, nid := range slices.Clone(w.nodes) {
					if n := m.nodes[nid]; n != nil && !n.state.Terminal() {
						m.cancelLocked(ctx, n, reason, false, &b, &fx, &out)
					}
				}
				if len(out) == 0 {
					err = fmt.Errorf("workflow %s %w", id, ErrFinished)
				} else {
					m.sweepLocked(wfID, &b, &fx)
				}
			}
		}
	default:
		n := m.finalLocked(ctx, id)
		switch {
		case n == nil:
			err = fmt.Errorf("sub-session %q %w", id, ErrNotFound)
		case n.state.Terminal():
			err = fmt.Errorf("sub-session %s %w (%s)", id, ErrFinished, n.state)
		default:
			m.cancelLocked(ctx, n, reason, true, &b, &fx, &out)
			m.sweepLocked(n.workflow, &b, &fx)
		}
	}
	m.commitLocked(&b)
	m.mu.Unlock()
	m.emit(&fx)
	if err == nil {
		m.log.Info("sub-sessions cancelled", "id", id, "cancelled", out, "reason", reason)
	}
	return out, err
}

// sweepLocked publishes workflow.completed|failed|cancelled when the
// workflow's last node finished, and evicts a workflow from memory once it
// is finished and everything in it was delivered.
func (m *Manager) sweepLocked(id string, b *batch, fx *effects) {
	w := m.wfs[id]
	if w == nil {
		return
	}
	done, delivered := true, true
	var failed, cancelled bool
	for _, nid := range w.nodes {
		n := m.nodes[nid]
		if n == nil {
			continue
		}
		if !n.state.Terminal() {
			done = false
		}
		if !n.delivered {
			delivered = false
		}
		if n.continuedBy == "" {
			failed = failed || n.state == StateFailed || n.state == StateTimeout
			cancelled = cancelled || n.state == StateCancelled
		}
	}
	if !done {
		return
	}
	if w.finishedAt.IsZero() {
		w.finishedAt = m.now()
		b.add(`UPDATE workflows SET finished_at = ? WHERE id = ?`, unixNano(w.finishedAt), w.id)
		st, topic := StateCompleted, TopicWorkflowCompleted
		switch {
		case failed:
			st, topic = StateFailed, TopicWorkflowFailed
		case cancelled:
			st, topic = StateCancelled, TopicWorkflowCancelled
		}
		fx.publish(topic, workflowPayload{Workflow: w.id, RootThread: string(w.root), State: st, Nodes: len(w.nodes)})
	}
	if !delivered {
		return
	}
	for _, d := range m.outbox {
		for _, nid := range d.nodes {
			if n := m.nodes[nid]; n != nil && n.workflow == id {
				return
			}
		}
	}
	m.evictLocked(w)
}

// evictLocked forgets a finished, delivered workflow; lookups load it again
// from the database when a new session depends on one of its nodes.
func (m *Manager) evictLocked(w *wf) {
	gone := map[string]bool{}
	for _, nid := range w.nodes {
		gone[nid] = true
		delete(m.nodes, nid)
		delete(m.children, nid)
		delete(m.aggregated, nid)
	}
	for k, list := range m.lineages {
		list = slices.DeleteFunc(list, func(id string) bool { return gone[id] })
		if len(list) == 0 {
			delete(m.lineages, k)
		} else {
			m.lineages[k] = list
		}
	}
	for k, list := range m.children {
		m.children[k] = slices.DeleteFunc(list, func(id string) bool { return gone[id] })
	}
	delete(m.wfs, w.id)
	for k, v := range m.merged {
		if v == w.id {
			delete(m.merged, k)
		}
	}
}

// launchLocked starts ready sessions while worker slots are free.
func (m *Manager) launchLocked(ctx context.Context, fx *effects) {
	for len(m.ready) > 0 && m.running < m.o.MaxConcurrent {
		id := m.ready[0]
		m.ready = m.ready[1:]
		n := m.nodes[id]
		if n == nil || n.state != StatePending || n.waiting != waitConcurrency {
			continue
		}
		sp, err := m.specLocked(ctx, n)
		var b batch
		if err != nil {
			m.failWaveLocked(ctx, n, err.Error(), &b, fx)
			m.sweepLocked(n.workflow, &b, fx)
			m.commitLocked(&b)
			continue
		}
		n.state, n.waiting = StateRunning, ""
		if n.startedAt.IsZero() {
			n.startedAt = m.now()
		}
		b.updateNode(n)
		m.commitLocked(&b)
		fx.publish(TopicStarted, m.payload(n))
		wctx, cancel := context.WithCancelCause(ctx)
		n.cancel = cancel
		m.running++
		m.wg.Go(func() {
			defer cancel(nil)
			m.work(wctx, n, sp)
		})
	}
}

// fireGatesLocked moves sessions whose time gate has passed to the ready
// queue and returns the next gate's time (zero when none).
func (m *Manager) fireGatesLocked() time.Time {
	now := m.now()
	for m.gates.Len() > 0 {
		g := m.gates[0]
		if g.at.After(now) {
			return g.at
		}
		heap.Pop(&m.gates)
		if n := m.nodes[g.id]; n != nil && n.state == StatePending && n.waiting == waitNotBefore {
			n.waiting = waitConcurrency
			m.ready = append(m.ready, n.id)
		}
	}
	return time.Time{}
}

// recoverLocked prepares the loaded state when Run starts: running
// sessions are resumed from their saved messages (at most
// MaxContinuations times), pending ones re-evaluated (time gates re-armed),
// undelivered results queued again.
func (m *Manager) recoverLocked(ctx context.Context, fx *effects) {
	var b batch
	ids := make([]string, 0, len(m.nodes))
	for id := range m.nodes {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, c string) int { return m.nodes[a].createdAt.Compare(m.nodes[c].createdAt) })
	for _, id := range ids {
		n := m.nodes[id]
		if n.state != StateRunning || n.cancel != nil {
			continue
		}
		n.resumes++
		if n.resumes > m.o.MaxContinuations {
			m.failWaveLocked(ctx, n, fmt.Sprintf("interrupted by %d restarts while running; giving up", n.resumes), &b, fx)
			continue
		}
		n.state = StatePending
		b.updateNode(n)
		b.appendNote(n.id, llm.UserText(resumeNote))
		m.log.Info("resuming a sub-session interrupted by a restart", "session", n.id, "resumes", n.resumes)
	}
	for _, id := range ids {
		if n := m.nodes[id]; n.state == StatePending {
			m.evaluateLocked(ctx, n, &b, fx)
		}
	}
	// Results not yet handed on: depth-1 sessions one by one, nested ones
	// through their parent's aggregation.
	var terminal []*node
	for _, id := range ids {
		if n := m.nodes[id]; n.state.Terminal() && !n.delivered {
			terminal = append(terminal, n)
		}
	}
	for _, n := range terminal {
		m.planDeliveriesLocked(ctx, []*node{n}, &b, fx)
	}
	for id := range m.wfs {
		m.sweepLocked(id, &b, fx)
	}
	m.commitLocked(&b)
}

// Run starts and supervises the workers until ctx ends, then waits for
// every worker to return. Sessions interrupted by the stop stay running in
// the database and are resumed by the next Run. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.phase != phaseIdle {
		m.mu.Unlock()
		return errors.New("workflow: Run called twice")
	}
	m.phase = phaseRunning
	var fx effects
	m.recoverLocked(ctx, &fx)
	m.mu.Unlock()
	m.emit(&fx)

	gateTimer := time.NewTimer(time.Hour)
	gateTimer.Stop()
	defer gateTimer.Stop()
	retryTimer := time.NewTimer(time.Hour)
	retryTimer.Stop()
	defer retryTimer.Stop()
	backoff := time.Second
	// retrying: a delivery failed and waits for retryTimer. Until it fires,
	// other wakes (a worker finishing, a gate) leave the outbox alone, so
	// that the backoff holds and the results keep their order.
	retrying := false
	for {
		var fx effects
		m.mu.Lock()
		next := m.fireGatesLocked()
		m.launchLocked(ctx, &fx)
		var items []*delivery
		if !retrying {
			items = m.outbox
			m.outbox = nil
		}
		m.mu.Unlock()
		fx.wake = false
		m.emit(&fx)
		if !next.IsZero() {
			gateTimer.Reset(max(next.Sub(m.now()), 0))
		}
		if failed := m.deliver(ctx, items); len(failed) > 0 {
			m.mu.Lock()
			m.outbox = append(failed, m.outbox...)
			m.mu.Unlock()
			if ctx.Err() == nil {
				retryTimer.Reset(backoff)
				backoff = min(backoff*2, time.Minute)
				retrying = true
			}
		} else if len(items) > 0 {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			m.mu.Lock()
			m.phase = phaseStopping
			m.mu.Unlock()
			m.wg.Wait()
			return nil
		case <-m.wake:
		case <-gateTimer.C:
		case <-retryTimer.C:
			retrying = false
		}
	}
}

// deliver hands items to the Deliverer in order and marks their sessions
// delivered; it returns the items that were not accepted.
func (m *Manager) deliver(ctx context.Context, items []*delivery) []*delivery {
	for i, d := range items {
		if m.o.Deliver != nil {
			if err := m.o.Deliver.EnqueueSystemEvent(ctx, d.thread, d.text); err != nil {
				if ctx.Err() == nil {
					m.log.Warn("could not deliver a sub-session result; will retry", "thread", d.thread, "sessions", d.nodes, "err", err)
				}
				return items[i:]
			}
		}
		var b batch
		var fx effects
		m.mu.Lock()
		wfs := map[string]bool{}
		for _, id := range d.nodes {
			if n := m.nodes[id]; n != nil {
				n.delivered = true
				b.add(`UPDATE workflow_nodes SET delivered = 1 WHERE id = ?`, id)
				wfs[n.workflow] = true
			}
		}
		for id := range wfs {
			m.sweepLocked(id, &b, &fx)
		}
		m.commitLocked(&b)
		m.mu.Unlock()
		m.emit(&fx)
	}
	return nil
}

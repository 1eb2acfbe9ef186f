package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// Handlers of the editable state: memories, pulse, skills, tasks,
// workflows, world state and setup. Each answers 501 when its service is
// not offered.

func (w *Web) listMemories(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Memories
	q := query{r: r}
	text := strings.TrimSpace(q.str("q"))
	kinds := q.list("kind")
	sources := q.list("source")
	limit := int(q.int("limit", 50, 1, 1000))
	offset := int(q.int("offset", 0, 0, 1<<31))
	closed := q.bool("include_closed")
	byAccess := false
	switch order := q.str("order"); order {
	case "", "created":
	case "access":
		byAccess = true
	default:
		q.fail("unknown order %q (created or access)", order)
	}
	for _, k := range kinds {
		if !slices.Contains(api.MemoryKinds, k) {
			q.fail("unknown kind %q (one of %s)", k, strings.Join(api.MemoryKinds, ", "))
		}
	}
	for _, src := range sources {
		if !slices.Contains(api.MemorySources, src) {
			q.fail("unknown source %q (one of %s)", src, strings.Join(api.MemorySources, ", "))
		}
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	var (
		ms  []api.Memory
		err error
	)
	if text != "" {
		ms, err = s.Search(r.Context(), api.MemorySearch{Text: text, Limit: limit, Kinds: kinds, IncludeClosed: closed})
	} else {
		ms, err = s.List(r.Context(), api.MemoryFilter{Kinds: kinds, Sources: sources, IncludeClosed: closed, Limit: limit, Offset: offset,
			OrderByAccess: byAccess})
	}
	w.reply(rw, r, api.MemoryList{Memories: nonNil(ms)}, err)
}

func (w *Web) getMemory(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Memories
	id, err := pathID(r)
	if err == nil {
		var m api.Memory
		if m, err = s.Get(r.Context(), id); err == nil {
			writeJSON(rw, http.StatusOK, m)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func validMemoryInput(in api.MemoryInput) error {
	switch {
	case strings.TrimSpace(in.Text) == "":
		// As the memory service says it (memory.ErrEmpty's wrapping), so
		// the CLI reads the same through a running agent as in process.
		return fmt.Errorf("%w: memory text is empty", api.ErrInvalid)
	case in.Kind == "":
		return fmt.Errorf("%w: kind is missing (one of %s)", api.ErrInvalid, strings.Join(api.MemoryKinds, ", "))
	case !slices.Contains(api.MemoryKinds, in.Kind):
		return fmt.Errorf("%w: unknown kind %q (one of %s)", api.ErrInvalid, in.Kind, strings.Join(api.MemoryKinds, ", "))
	case in.Source != "" && !slices.Contains(api.MemorySources, in.Source):
		return fmt.Errorf("%w: unknown source %q (one of %s)", api.ErrInvalid, in.Source, strings.Join(api.MemorySources, ", "))
	}
	return nil
}

func (w *Web) addMemory(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Memories
	var in api.MemoryInput
	err := decodeBody(r, &in)
	if err == nil {
		err = validMemoryInput(in)
	}
	if err == nil {
		if in.Source == "" {
			in.Source = "user_explicit"
		}
		var m api.Memory
		if m, err = s.Add(r.Context(), in); err == nil {
			writeJSON(rw, http.StatusCreated, m)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) updateMemory(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Memories
	id, err := pathID(r)
	var in api.MemoryInput
	if err == nil {
		err = decodeBody(r, &in)
	}
	if err == nil {
		err = validMemoryInput(in)
	}
	if err == nil {
		var m api.Memory
		if m, err = s.Update(r.Context(), id, in); err == nil {
			writeJSON(rw, http.StatusOK, m)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) forgetMemory(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Memories
	id, err := pathID(r)
	if err == nil {
		if err = s.Forget(r.Context(), id); err == nil {
			rw.WriteHeader(http.StatusNoContent)
			return
		}
	}
	w.serviceError(rw, r, err)
}

var pulseStatuses = []string{api.PulseActive, api.PulseCompleted, api.PulseCancelled}

func validPulseInput(in api.PulseInput, create bool) error {
	switch {
	case create && (in.Text == nil || strings.TrimSpace(*in.Text) == ""):
		return fmt.Errorf("%w: text is empty", api.ErrInvalid)
	case in.Text != nil && strings.TrimSpace(*in.Text) == "":
		return fmt.Errorf("%w: text is empty", api.ErrInvalid)
	case in.Status != nil && !slices.Contains(pulseStatuses, *in.Status):
		return fmt.Errorf("%w: unknown status %q (one of %s)", api.ErrInvalid, *in.Status, strings.Join(pulseStatuses, ", "))
	case in.Priority != nil && (*in.Priority < api.PulseMinPriority || *in.Priority > api.PulseMaxPriority):
		return fmt.Errorf("%w: priority must be %d (urgent) to %d (low)", api.ErrInvalid, api.PulseMinPriority, api.PulseMaxPriority)
	}
	return nil
}

func (w *Web) listPulse(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Pulse
	status := r.URL.Query().Get("status")
	if status == "" {
		status = api.PulseActive
	}
	if status != "all" && !slices.Contains(pulseStatuses, status) {
		writeError(rw, http.StatusBadRequest, fmt.Sprintf("unknown status %q (one of %s or all)", status, strings.Join(pulseStatuses, ", ")))
		return
	}
	items, err := s.List(r.Context(), status)
	w.reply(rw, r, api.PulseList{Items: nonNil(items)}, err)
}

func (w *Web) addPulse(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Pulse
	var in api.PulseInput
	err := decodeBody(r, &in)
	if err == nil {
		err = validPulseInput(in, true)
	}
	if err == nil {
		var it api.PulseItem
		if it, err = s.Add(r.Context(), in); err == nil {
			writeJSON(rw, http.StatusCreated, it)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) updatePulse(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Pulse
	id, err := pathID(r)
	var in api.PulseInput
	if err == nil {
		err = decodeBody(r, &in)
	}
	if err == nil {
		err = validPulseInput(in, false)
	}
	if err == nil {
		var it api.PulseItem
		if it, err = s.Update(r.Context(), id, in); err == nil {
			writeJSON(rw, http.StatusOK, it)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) deletePulse(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Pulse
	id, err := pathID(r)
	if err == nil {
		if err = s.Delete(r.Context(), id); err == nil {
			rw.WriteHeader(http.StatusNoContent)
			return
		}
	}
	w.serviceError(rw, r, err)
}

var skillName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })

func skillParam(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if !skillName().MatchString(name) {
		return "", fmt.Errorf("%w: skill name %q: use lower-case letters, digits, - and _ (at most 64)", api.ErrInvalid, name)
	}
	return name, nil
}

func (w *Web) listSkills(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Skills
	list, err := s.List(r.Context())
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	for i := range list {
		list[i].Content = ""
	}
	writeJSON(rw, http.StatusOK, api.SkillList{Skills: nonNil(list)})
}

func (w *Web) getSkill(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Skills
	name, err := skillParam(r)
	if err == nil {
		var sk api.Skill
		if sk, err = s.Get(r.Context(), name); err == nil {
			writeJSON(rw, http.StatusOK, sk)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) putSkill(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Skills
	name, err := skillParam(r)
	var in api.SkillInput
	if err == nil {
		err = decodeBody(r, &in)
	}
	if err == nil && strings.TrimSpace(in.Content) == "" {
		err = fmt.Errorf("%w: content is empty", api.ErrInvalid)
	}
	if err == nil {
		var sk api.Skill
		if sk, err = s.Put(r.Context(), name, in.Content); err == nil {
			writeJSON(rw, http.StatusOK, sk)
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) deleteSkill(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Skills
	name, err := skillParam(r)
	if err == nil {
		if err = s.Delete(r.Context(), name); err == nil {
			rw.WriteHeader(http.StatusNoContent)
			return
		}
	}
	w.serviceError(rw, r, err)
}

var (
	taskStatuses  = []string{api.TaskActive, api.TaskPaused, api.TaskDone, api.TaskCancelled, api.TaskInactive}
	scheduleKinds = []string{"once", "daily", "weekly", "monthly", "interval", "cron"}
)

func validTaskInput(in api.TaskInput) error {
	switch {
	case strings.TrimSpace(in.Text) == "" && strings.TrimSpace(in.AIPrompt) == "":
		return fmt.Errorf("%w: a task needs text (a reminder) or ai_prompt (an AI task)", api.ErrInvalid)
	case in.Schedule.Kind == "":
		return fmt.Errorf("%w: schedule.kind is missing (one of %s)", api.ErrInvalid, strings.Join(scheduleKinds, ", "))
	case !slices.Contains(scheduleKinds, in.Schedule.Kind):
		return fmt.Errorf("%w: unknown schedule.kind %q (one of %s)", api.ErrInvalid, in.Schedule.Kind, strings.Join(scheduleKinds, ", "))
	}
	return nil
}

func (w *Web) listTasks(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Tasks
	q := query{r: r}
	tq := api.TaskQuery{Thread: chat.ThreadID(q.str("thread")), Statuses: q.list("status"), Jobs: q.bool("jobs")}
	for _, st := range tq.Statuses {
		if st == "all" {
			tq.Statuses = taskStatuses
			break
		}
		if !slices.Contains(taskStatuses, st) {
			q.fail("unknown status %q (one of %s or all)", st, strings.Join(taskStatuses, ", "))
		}
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	list, err := s.List(r.Context(), tq)
	w.reply(rw, r, api.TaskList{Tasks: nonNil(list)}, err)
}

func (w *Web) getTask(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Tasks
	t, err := s.Get(r.Context(), r.PathValue("id"))
	w.reply(rw, r, t, err)
}

func (w *Web) addTask(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Tasks
	var in api.TaskInput
	err := decodeBody(r, &in)
	if err == nil {
		err = validTaskInput(in)
	}
	if err == nil {
		var t api.Task
		if t, err = s.Add(r.Context(), in); err == nil {
			writeJSON(rw, http.StatusCreated, t)
			return
		}
	}
	w.serviceError(rw, r, err)
}

// taskAction serves POST /tasks/{id}/pause and /resume.
func (w *Web) taskAction(pause bool) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		s := w.svc.Tasks
		var (
			t   api.Task
			err error
		)
		if pause {
			t, err = s.Pause(r.Context(), r.PathValue("id"))
		} else {
			t, err = s.Resume(r.Context(), r.PathValue("id"))
		}
		if err != nil {
			w.serviceError(rw, r, err)
			return
		}
		writeJSON(rw, http.StatusOK, t)
	}
}

func (w *Web) cancelTask(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Tasks
	t, err := s.Cancel(r.Context(), r.PathValue("id"))
	w.reply(rw, r, t, err)
}

func (w *Web) listReceipts(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Tasks
	q := query{r: r}
	rq := api.ReceiptQuery{TaskID: q.str("task"), Limit: int(q.int("limit", 50, 1, 1000))}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	list, err := s.Receipts(r.Context(), rq)
	w.reply(rw, r, api.ReceiptList{Receipts: nonNil(list)}, err)
}

func (w *Web) listWorkflows(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Workflows
	q := query{r: r}
	wq := api.WorkflowQuery{Active: q.bool("active"), Thread: chat.ThreadID(q.str("thread")), Limit: int(q.int("limit", 50, 1, 500))}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	list, err := s.List(r.Context(), wq)
	w.reply(rw, r, api.WorkflowList{Workflows: nonNil(list)}, err)
}

func (w *Web) getWorkflow(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Workflows
	wf, err := s.Get(r.Context(), r.PathValue("id"))
	w.reply(rw, r, wf, err)
}

func (w *Web) cancelWorkflow(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Workflows
	ids, err := s.Cancel(r.Context(), r.PathValue("id"))
	w.reply(rw, r, map[string][]string{"cancelled": nonNil(ids)}, err)
}

// sender is the web user as a message's sender: id, and the user's name
// from the world state's identity (user_name, else session_user_name; ""
// when neither is set or the world state is off), which memory stores as
// the speaker of what they say.
func (w *Web) sender(ctx context.Context, id string) chat.Sender {
	s := chat.Sender{ID: id}
	if w.svc.World == nil {
		return s
	}
	doc, err := w.svc.World.Get(ctx)
	if err != nil {
		w.log.Warn("could not read the user's name from the world state", "err", err)
		return s
	}
	var st struct {
		Identity struct {
			UserName        string `json:"user_name"`
			SessionUserName string `json:"session_user_name"`
		} `json:"identity"`
	}
	if err := json.Unmarshal(doc, &st); err == nil {
		s.DisplayName = strings.TrimSpace(cmp.Or(st.Identity.UserName, st.Identity.SessionUserName))
	}
	return s
}

func (w *Web) getWorld(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.World
	doc, err := s.Get(r.Context())
	w.reply(rw, r, json.RawMessage(doc), err)
}

func (w *Web) putWorld(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.World
	var doc json.RawMessage
	err := decodeBody(r, &doc)
	if err == nil && (len(doc) == 0 || doc[0] != '{') {
		err = fmt.Errorf("%w: the world state is a JSON object", api.ErrInvalid)
	}
	if err == nil {
		if doc, err = s.Put(r.Context(), doc); err == nil {
			writeJSON(rw, http.StatusOK, json.RawMessage(doc))
			return
		}
	}
	w.serviceError(rw, r, err)
}

func (w *Web) setupForms(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Setup
	st, err := s.Forms(r.Context())
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	st.Forms = nonNil(st.Forms)
	writeJSON(rw, http.StatusOK, st)
}

func (w *Web) applySetup(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.Setup
	var req api.SetupRequest
	err := decodeBody(r, &req)
	if err == nil {
		var msg string
		// A real test call may take a while.
		_ = http.NewResponseController(rw).SetWriteDeadline(time.Now().Add(2 * w.cfg.WriteTimeout)) // the wall clock, not the host's
		if msg, err = s.Apply(r.Context(), r.PathValue("form"), req.Values); err == nil {
			writeJSON(rw, http.StatusOK, api.SetupResult{OK: true, Message: msg})
			return
		}
	}
	w.serviceError(rw, r, err)
}

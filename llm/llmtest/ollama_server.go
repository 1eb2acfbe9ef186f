package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// OllamaEmbedRequest is an Ollama POST /api/embed request as received on
// the wire. Input is a string or an array of strings.
type OllamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate,omitempty"`
	Dimensions int             `json:"dimensions,omitempty"`
	KeepAlive  json.RawMessage `json:"keep_alive,omitempty"`
	Options    json.RawMessage `json:"options,omitempty"`
}

// Texts returns the input texts (one for a string input).
func (r OllamaEmbedRequest) Texts() ([]string, error) {
	var one string
	if err := json.Unmarshal(r.Input, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(r.Input, &many); err != nil {
		return nil, fmt.Errorf("invalid input type")
	}
	return many, nil
}

// OllamaServer is a fake Ollama server for embeddings: POST /api/embed
// answers as Ollama does ({"model", "embeddings", "total_duration",
// "load_duration", "prompt_eval_count"}) with deterministic vectors
// (FakeEmbedding) of the model's size; an unknown model is a 404 with
// Ollama's {"error": "model \"x\" not found, try pulling it first"}.
type OllamaServer struct {
	t   testing.TB
	srv *httptest.Server

	mu     sync.Mutex
	models map[string]int // name → dimensions
	fail   []ServerReply
	hold   chan struct{} // requests wait for it to close; nil: none
	reqs   []OllamaEmbedRequest
	heldC  chan struct{} // signalled when a request starts waiting
}

// NewOllamaServer starts the server; it stops when the test ends.
func NewOllamaServer(t testing.TB) *OllamaServer {
	s := &OllamaServer{t: t, models: map[string]int{}, heldC: make(chan struct{}, 64)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server address (what OLLAMA_HOST or base_url names).
func (s *OllamaServer) URL() string { return s.srv.URL }

// AddModel makes a model available with vectors of dims dimensions (the
// model's own size; a request's "dimensions" overrides it).
func (s *OllamaServer) AddModel(name string, dims int) {
	s.mu.Lock()
	s.models[name] = dims
	s.mu.Unlock()
}

// EnqueueFailure makes the next /api/embed call fail with r.Status and
// r.ErrorMessage in Ollama's error format.
func (s *OllamaServer) EnqueueFailure(r ServerReply) {
	s.mu.Lock()
	s.fail = append(s.fail, r)
	s.mu.Unlock()
}

// Hold makes /api/embed calls wait (after being recorded) until release
// is called or the client goes away.
func (s *OllamaServer) Hold() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.hold = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.hold == ch {
				s.hold = nil
			}
			s.mu.Unlock()
			close(ch)
		})
	}
}

// WaitHeld blocks until a request waits on Hold (at most a minute of real
// time; the test fails after that).
func (s *OllamaServer) WaitHeld() {
	select {
	case <-s.heldC:
	case <-time.After(time.Minute):
		s.t.Errorf("llmtest: OllamaServer: no request held")
	}
}

// Requests returns the decoded /api/embed requests, in order.
func (s *OllamaServer) Requests() []OllamaEmbedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OllamaEmbedRequest(nil), s.reqs...)
}

func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": msg})
}

func (s *OllamaServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/embed" {
		// Ollama answers unknown routes with a plain 404.
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req OllamaEmbedRequest
	if err := json.Unmarshal(body, &req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	hold := s.hold
	var fail *ServerReply
	if len(s.fail) > 0 {
		fail = &s.fail[0]
		s.fail = s.fail[1:]
	}
	dims, known := s.models[req.Model]
	s.mu.Unlock()
	if hold != nil {
		s.heldC <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if fail != nil {
		msg := fail.ErrorMessage
		if msg == "" {
			msg = http.StatusText(fail.Status)
		}
		ollamaError(w, fail.Status, msg)
		return
	}
	if req.Model == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	if !known {
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model))
		return
	}
	texts, err := req.Texts()
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	vecs := make([][]float32, len(texts))
	tokens := 0
	for i, t := range texts {
		vecs[i] = FakeEmbedding(t, dims)
		tokens += len(strings.Fields(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model": req.Model, "embeddings": vecs,
		"total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": tokens,
	})
}

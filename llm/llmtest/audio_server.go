package llmtest

import (
	"bytes"
	_ "embed" // audio fixtures
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Real audio for tests (see testdata/audio/README.md for how it was made).
var (
	//go:embed testdata/audio/spoken.ogg
	spokenOgg []byte
	//go:embed testdata/audio/spoken.wav
	spokenWAV []byte
	//go:embed testdata/audio/speech.ogg
	speechOgg []byte
)

// SpokenText is what SpokenOgg and SpokenWAV say.
const SpokenText = "What time is it in Lisbon?"

// SpokenOgg is SpokenText spoken by espeak-ng as an Ogg/Opus file (what a
// Telegram voice note is).
func SpokenOgg() []byte { return bytes.Clone(spokenOgg) }

// SpokenWAV is SpokenText spoken by espeak-ng as a 16-bit mono WAV file
// (what Chromium's fake microphone plays).
func SpokenWAV() []byte { return bytes.Clone(spokenWAV) }

// SpeechOgg is the Ogg/Opus file the AudioServer answers a speech request
// for the opus format with (espeak-ng saying "It is noon.").
func SpeechOgg() []byte { return bytes.Clone(speechOgg) }

// TranscriptionRequest is one POST /v1/audio/transcriptions an AudioServer
// received, decoded from its multipart form.
type TranscriptionRequest struct {
	Model          string
	ResponseFormat string
	Language       string
	// FileName and ContentType are the file part's; Audio its bytes.
	FileName    string
	ContentType string
	Audio       []byte
	// Authorization is the request's header.
	Authorization string
}

// SpeechRequest is one POST /v1/audio/speech an AudioServer received.
type SpeechRequest struct {
	Model          string  `json:"model"`
	Input          string  `json:"input"`
	Voice          string  `json:"voice"`
	ResponseFormat string  `json:"response_format"`
	Speed          float64 `json:"speed"`
	Authorization  string  `json:"-"`
}

// AudioReply programs one answer of an AudioServer: a transcript (Text) or
// an error (Status >= 400 with ErrorMessage, in OpenAI's error format).
type AudioReply struct {
	Text         string
	Status       int
	ErrorMessage string
}

// AudioServer is an httptest server speaking OpenAI's audio API: POST
// /v1/audio/transcriptions takes a multipart form (file, model,
// response_format…) and answers {"text": …} (or plain text for
// response_format text); POST /v1/audio/speech takes JSON and answers the
// audio file's bytes — SpeechOgg for opus, a generated WAV for wav.
// A file that is not audio (no Ogg, WAV, WebM, FLAC, MP3 or MP4 header) is
// refused with 400, as OpenAI does. Transcripts come from the queue
// (Enqueue), then from the handler (Handle), else SpokenText.
type AudioServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	queue    []AudioReply
	handler  func(TranscriptionRequest) AudioReply
	speechQ  []AudioReply
	trans    []TranscriptionRequest
	speeches []SpeechRequest
}

// NewAudioServer starts a server that is closed when the test ends.
func NewAudioServer(t Owner) *AudioServer {
	s := &AudioServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// BaseURL is the API base URL to configure a client with.
func (s *AudioServer) BaseURL() string { return s.srv.URL + "/v1" }

// Enqueue adds answers for the next transcription calls, in order.
func (s *AudioServer) Enqueue(rs ...AudioReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Handle sets the function answering transcriptions once the queue is empty.
func (s *AudioServer) Handle(h func(TranscriptionRequest) AudioReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// EnqueueSpeechFailure makes the next speech call fail with r's Status.
func (s *AudioServer) EnqueueSpeechFailure(r AudioReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.speechQ = append(s.speechQ, r)
}

// Transcriptions returns the transcription requests received, in order.
func (s *AudioServer) Transcriptions() []TranscriptionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]TranscriptionRequest(nil), s.trans...)
}

// Speeches returns the speech requests received, in order.
func (s *AudioServer) Speeches() []SpeechRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SpeechRequest(nil), s.speeches...)
}

func (s *AudioServer) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/audio/transcriptions":
		s.transcribe(w, r)
	case r.Method == http.MethodPost && path == "/audio/speech":
		s.speak(w, r)
	default:
		audioError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

func (s *AudioServer) transcribe(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		audioError(w, http.StatusBadRequest, "the request must be multipart/form-data, not "+r.Header.Get("Content-Type"))
		return
	}
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		audioError(w, http.StatusBadRequest, "bad multipart form: "+err.Error())
		return
	}
	req := TranscriptionRequest{Model: r.FormValue("model"), ResponseFormat: r.FormValue("response_format"),
		Language: r.FormValue("language"), Authorization: r.Header.Get("Authorization")}
	f, fh, err := r.FormFile("file")
	if err != nil {
		audioError(w, http.StatusBadRequest, "the file part is missing: "+err.Error())
		return
	}
	req.Audio, _ = io.ReadAll(f)
	_ = f.Close()
	req.FileName, req.ContentType = fh.Filename, fh.Header.Get("Content-Type")
	s.mu.Lock()
	s.trans = append(s.trans, req)
	var reply AudioReply
	switch {
	case len(s.queue) > 0:
		reply, s.queue = s.queue[0], s.queue[1:]
	case s.handler != nil:
		h := s.handler
		s.mu.Unlock()
		reply = h(req)
		s.mu.Lock()
	default:
		reply = AudioReply{Text: SpokenText}
	}
	s.mu.Unlock()
	switch {
	case req.Model == "":
		audioError(w, http.StatusBadRequest, "you must provide a model parameter")
		return
	case AudioFormat(req.Audio) == "":
		audioError(w, http.StatusBadRequest, "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']")
		return
	case reply.Status >= 400:
		audioError(w, reply.Status, reply.ErrorMessage)
		return
	}
	if req.ResponseFormat == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, reply.Text+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": reply.Text, "usage": map[string]any{"type": "duration", "seconds": 2}})
}

func (s *AudioServer) speak(w http.ResponseWriter, r *http.Request) {
	var req SpeechRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		audioError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	s.mu.Lock()
	s.speeches = append(s.speeches, req)
	var fail AudioReply
	if len(s.speechQ) > 0 {
		fail, s.speechQ = s.speechQ[0], s.speechQ[1:]
	}
	s.mu.Unlock()
	switch {
	case fail.Status >= 400:
		audioError(w, fail.Status, fail.ErrorMessage)
		return
	case req.Model == "" || req.Voice == "":
		audioError(w, http.StatusBadRequest, "model and voice are required")
		return
	case strings.TrimSpace(req.Input) == "":
		audioError(w, http.StatusBadRequest, "input must not be empty")
		return
	case len([]rune(req.Input)) > 4096:
		audioError(w, http.StatusBadRequest, "input is longer than 4096 characters")
		return
	}
	switch req.ResponseFormat {
	case "opus":
		w.Header().Set("Content-Type", "audio/ogg")
		_, _ = w.Write(speechOgg)
	case "wav":
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(SilentWAV(8000, len([]rune(req.Input))*80))
	case "", "mp3":
		audioError(w, http.StatusBadRequest, "this fake server speaks opus and wav only")
	default:
		audioError(w, http.StatusBadRequest, fmt.Sprintf("unknown response_format %q", req.ResponseFormat))
	}
}

// SilentWAV is a 16-bit mono PCM WAV file of n silent samples at rate Hz.
func SilentWAV(rate, n int) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("RIFF")
	_ = binary.Write(&b, le, uint32(36+2*n))
	b.WriteString("WAVEfmt ")
	_ = binary.Write(&b, le, uint32(16))
	_ = binary.Write(&b, le, uint16(1)) // PCM
	_ = binary.Write(&b, le, uint16(1)) // mono
	_ = binary.Write(&b, le, uint32(rate))
	_ = binary.Write(&b, le, uint32(2*rate))
	_ = binary.Write(&b, le, uint16(2))
	_ = binary.Write(&b, le, uint16(16))
	b.WriteString("data")
	_ = binary.Write(&b, le, uint32(2*n))
	b.Write(make([]byte, 2*n))
	return b.Bytes()
}

// AudioFormat names the container data starts with ("ogg", "wav", "webm",
// "flac", "mp3", "mp4"), or "" when it is none of them.
func AudioFormat(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("OggS")):
		return "ogg"
	case len(data) >= 12 && bytes.HasPrefix(data, []byte("RIFF")) && string(data[8:12]) == "WAVE":
		return "wav"
	case bytes.HasPrefix(data, []byte{0x1a, 0x45, 0xdf, 0xa3}):
		return "webm"
	case bytes.HasPrefix(data, []byte("fLaC")):
		return "flac"
	case bytes.HasPrefix(data, []byte("ID3")), len(data) >= 2 && data[0] == 0xff && data[1]&0xe0 == 0xe0:
		return "mp3"
	case len(data) >= 8 && string(data[4:8]) == "ftyp":
		return "mp4"
	}
	return ""
}

// audioError writes OpenAI's error body.
func audioError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// BenchmarkHTTPTurns drives one long conversation the way a user of the
// HTTP API has it: each turn is a POST /api/v1/threads/{thread}/messages to
// the web extension of the whole app, run in process on a real data dir
// (SQLite, the shipped prompts, episodes on with the default embedder,
// the default history budget), against the fake OpenAI-compatible server
// configured as a backend with a 200k-token context window (as today's
// large models have; the history budget, not the window, bounds requests),
// which answers at once: what is timed is Reverie's own cost of a turn, from
// the request to the response. Messages have realistic sizes (user
// messages of 30–60 words, replies of 120–240; every seventh turn reads a
// 2 KB workspace file with read_file first), generated from a fixed word
// list, so that the conversation is long in tokens as a real one is.
// The memory harvest is off (its background worker calls the model on its
// own schedule) and so is the web rate limit (a turn can take less than
// its 50 ms); everything else is as configured by default.
//
// REVERIE_BENCH_CONVERSATIONS=FILE takes the messages and replies from a
// LongMemEval-format file instead (../shared/data/longmemeval: real
// user–assistant conversations on many topics; see conversationTexts), so
// that recall, its gate and its excerpts act on real text: the word list's
// texts share words in every sentence, so nothing recalled is cut.
//
// REVERIE_BENCH_EMBEDDING=MODEL sets memory.embedding.model (default: the
// sentence encoder built into the binary, builtin/use-lite, with which each
// turn embeds the message, once for recall and storing, and the reply;
// builtin/hashing: the offline hashing embedder).
//
// REVERIE_BENCH_TURNS sets the turns of a conversation (default 1000, plus
// 5 so that the last window is centred) and REVERIE_BENCH_RUNS how many
// conversations are run, each on a fresh app (default 3);
// REVERIE_BENCH_PROFILE=PREFIX profiles the first run's early and late
// turns (see profiler). Run it with
// -benchtime=1x (bench/turns.sh does). It reports, for turns 10, 100 and
// 1,000, the median latency of the 10 turns around each (pooled over the
// runs: turn 10 is turns 5–14) and the ratio of the last to the first, and
// the mean input tokens per turn in the same windows, counted on the
// requests the model server received: those of the turn's own model calls
// ("in-tok"), and with the compaction calls of the window spread over its
// turns ("all-tok"); and the database's write-ahead log, the largest size
// seen after a turn in any run ("wal-max") and its size after the last turn
// (median of the runs; "wal-end"), in MiB.
func BenchmarkHTTPTurns(b *testing.B) {
	turns := benchEnvInt(b, "REVERIE_BENCH_TURNS", 1000)
	runs := benchEnvInt(b, "REVERIE_BENCH_RUNS", 3)
	var texts []exchangeText
	if file := os.Getenv("REVERIE_BENCH_CONVERSATIONS"); file != "" {
		var err error
		if texts, err = conversationTexts(file, turns+5); err != nil {
			b.Fatal(err)
		}
	}
	var marks []int
	for _, m := range []int{10, 100, 1000, 10000} {
		if m <= turns {
			marks = append(marks, m)
		}
	}
	latency := map[int][]float64{}
	tokens := map[int][]float64{}
	allTokens := map[int][]float64{}
	memTokens := map[int][]float64{}
	compactions := 0
	var walMax, walEnd []float64
	b.ResetTimer()
	profilePrefix := os.Getenv("REVERIE_BENCH_PROFILE")
	for range b.N {
		for range runs {
			r := runConversation(b, turns+5, marks, profilePrefix, texts)
			profilePrefix = ""
			for _, m := range marks {
				lo, hi := m-5, m+4
				var in, all, mem float64
				for t := lo; t <= hi; t++ {
					latency[m] = append(latency[m], r.took[t].Seconds()*1000)
					in += float64(r.mainTokens[t])
					all += float64(r.mainTokens[t] + r.compactionTokens[t])
					mem += float64(r.memoryTokens[t])
				}
				tokens[m] = append(tokens[m], in/float64(hi-lo+1))
				allTokens[m] = append(allTokens[m], all/float64(hi-lo+1))
				memTokens[m] = append(memTokens[m], mem/float64(hi-lo+1))
			}
			compactions += r.compactions
			walMax = append(walMax, float64(r.walMax)/(1<<20))
			walEnd = append(walEnd, float64(r.walEnd)/(1<<20))
		}
	}
	b.StopTimer()
	first, last := marks[0], marks[len(marks)-1]
	for _, m := range marks {
		b.ReportMetric(median(latency[m]), fmt.Sprintf("ms-turn%d", m))
		b.ReportMetric(median(tokens[m]), fmt.Sprintf("in-tok-turn%d", m))
		b.ReportMetric(median(allTokens[m]), fmt.Sprintf("all-tok-turn%d", m))
		b.ReportMetric(median(memTokens[m]), fmt.Sprintf("mem-tok-turn%d", m))
	}
	b.ReportMetric(median(latency[last])/median(latency[first]), fmt.Sprintf("ratio-ms-%d/%d", last, first))
	if len(marks) > 2 {
		mid := marks[len(marks)-2]
		b.ReportMetric(median(tokens[last])/median(tokens[mid]), fmt.Sprintf("ratio-tok-%d/%d", last, mid))
	}
	b.ReportMetric(float64(compactions)/float64(b.N*runs), "compactions/run")
	b.ReportMetric(slices.Max(walMax), "wal-max-MiB")
	b.ReportMetric(median(walEnd), "wal-end-MiB")
}

// turnRecord is what one run measured, indexed by turn (1-based).
type turnRecord struct {
	took                         []time.Duration
	mainTokens, compactionTokens []int
	// memoryTokens is the tokens of the recalled memories' packet in the
	// turn's model calls (part of mainTokens).
	memoryTokens []int
	compactions  int
	// walMax is the largest size of the database's write-ahead log seen
	// after a turn, walEnd its size after the last turn, in bytes.
	walMax, walEnd int64
}

// exchangeText is a user's message and the assistant's reply to it.
type exchangeText struct{ message, reply string }

// conversationTexts reads, from a LongMemEval-format file (a JSON array of
// questions, each with haystack_session_ids and haystack_sessions of
// {role, content} turns), the first n exchanges of its sessions in order,
// each session once: every user turn with the assistant turn right after
// it. Only as many questions are decoded as the n exchanges need.
func conversationTexts(file string, n int) ([]exchangeText, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read conversations: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if _, err := dec.Token(); err != nil { // [
		return nil, fmt.Errorf("read conversations from %s: %w", file, err)
	}
	seen := map[string]bool{}
	var out []exchangeText
	for len(out) < n && dec.More() {
		var q struct {
			IDs      []string `json:"haystack_session_ids"`
			Sessions [][]struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"haystack_sessions"`
		}
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("read conversations from %s: %w", file, err)
		}
		for i, s := range q.Sessions {
			if i < len(q.IDs) {
				if seen[q.IDs[i]] {
					continue
				}
				seen[q.IDs[i]] = true
			}
			for j := 0; j+1 < len(s); j++ {
				if s[j].Role == "user" && s[j+1].Role == "assistant" && strings.TrimSpace(s[j].Content) != "" {
					out = append(out, exchangeText{s[j].Content, s[j+1].Content})
				}
			}
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("read conversations from %s: %d exchanges, the run needs %d", file, len(out), n)
	}
	return out[:n], nil
}

// runConversation starts a fresh app and runs turns turns on one thread.
// The requests of the turns around marks are kept and their tokens counted
// after the run, so that counting does not slow the turns it measures.
// With profilePrefix, parts of the run are profiled (see profiler). With
// texts, turn t sends texts[t-1].message and the model answers with its
// reply; without, both are made from benchWords.
func runConversation(b *testing.B, turns int, marks []int, profilePrefix string, texts []exchangeText) turnRecord {
	b.StopTimer()
	env := []string{"REVERIE_HARVEST__ENABLED=false", "REVERIE_WEB__RATE_PER_SECOND=0"}
	if m := os.Getenv("REVERIE_BENCH_EMBEDDING"); m != "" {
		env = append(env, "REVERIE_MEMORY__EMBEDDING__MODEL="+m)
	}
	w := StartWeb(b, WithEnv(env...),
		WithModelEnv(func(url string) []string {
			return []string{
				"REVERIE_MODELS__BACKENDS={bench: {kind: openai, base_url: '" + url + "', api_key: sk-test, context_size: 200000}}",
				"REVERIE_MODELS__ROLES={main: [bench/gpt-test]}",
			}
		}))
	defer func() {
		if err := w.Stop(); err != nil {
			b.Errorf("stop app: %v", err)
		}
	}()
	notes := benchText(rand.New(rand.NewPCG(7, 7)), 350)
	if err := os.WriteFile(filepath.Join(w.DataDir, "workspace", "notes.txt"), []byte(notes), 0o644); err != nil {
		b.Fatal(err)
	}
	counter := prompt.NewCounter("")
	r := turnRecord{took: make([]time.Duration, turns+1), mainTokens: make([]int, turns+1), compactionTokens: make([]int, turns+1),
		memoryTokens: make([]int, turns+1)}
	counted := map[int]bool{}
	for _, m := range marks {
		for t := m - 5; t <= m+4; t++ {
			counted[t] = true
		}
	}
	type kept struct {
		turn       int
		compaction bool
		req        llmtest.ChatRequest
	}
	var (
		mu   sync.Mutex
		turn int
		reqs []kept
	)
	w.Model.DiscardRequests()
	rng := rand.New(rand.NewPCG(1, 2))
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case isTurnRequest(req):
			if counted[turn] {
				reqs = append(reqs, kept{turn, false, req})
			}
			last := req.Messages[len(req.Messages)-1]
			if last.Role == "user" && turn%7 == 0 {
				return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{Name: "read_file", Arguments: json.RawMessage(`{"path":"notes.txt"}`)}}}
			}
			if texts != nil {
				return llmtest.ServerReply{Text: texts[turn-1].reply}
			}
			return llmtest.ServerReply{Text: benchText(rng, 120+rng.IntN(121))}
		case strings.Contains(lastUser(req), "[PRIOR SUMMARY]"):
			if counted[turn] {
				reqs = append(reqs, kept{turn, true, req})
			}
			r.compactions++
			return llmtest.ServerReply{Text: benchText(rng, 250)}
		}
		return llmtest.ServerReply{Text: "ok"}
	})

	client := &http.Client{}
	msgRng := rand.New(rand.NewPCG(3, 4))
	profile := profiler{b: b, prefix: profilePrefix}
	profileLen := min(100, turns/4)
	defer profile.stop()
	b.StartTimer()
	for t := 1; t <= turns; t++ {
		switch t {
		case 6:
			profile.start("early")
		case 6 + profileLen:
			profile.stop()
		case turns - profileLen + 1:
			profile.start("late")
		}
		mu.Lock()
		turn = t
		mu.Unlock()
		text := benchText(msgRng, 30+msgRng.IntN(31)) + "?"
		if texts != nil {
			text = texts[t-1].message
		}
		body, _ := json.Marshal(map[string]string{"text": text})
		start := time.Now()
		code, resp := benchPost(b, client, w, "/threads/web:long/messages", body)
		r.took[t] = time.Since(start)
		if code != http.StatusOK {
			b.Fatalf("turn %d: %d %s", t, code, resp)
		}
		if fi, err := os.Stat(filepath.Join(w.DataDir, app.DatabaseFile+"-wal")); err == nil {
			r.walMax = max(r.walMax, fi.Size())
			r.walEnd = fi.Size()
		}
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	for _, k := range reqs {
		n := requestTokens(counter, k.req)
		if k.compaction {
			r.compactionTokens[k.turn] += n
		} else {
			r.mainTokens[k.turn] += n
			r.memoryTokens[k.turn] += counter.Count(recallBlock(k.req))
		}
	}
	return r
}

func benchPost(b *testing.B, client *http.Client, w *WebHarness, path string, body []byte) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.Base+"/api/v1"+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("POST %s: read: %v", path, err)
	}
	return resp.StatusCode, data
}

// recallBlock returns the packet of recalled memories in req's messages,
// as the prompt holds it, or "".
func recallBlock(req llmtest.ChatRequest) string {
	start := `{"kind":"memory","title":` + strings.TrimSuffix(strconv.Quote(memory.RecallTitle), `"`)
	for _, m := range req.Messages {
		text := m.Text()
		i := strings.Index(text, start)
		if i < 0 {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return ""
		}
		return text[i : i+int(dec.InputOffset())]
	}
	return ""
}

// isTurnRequest reports whether req is a conversation turn's model call:
// it offers tools (a compaction call offers none).
func isTurnRequest(req llmtest.ChatRequest) bool { return len(req.Tools) > 0 }

// requestTokens counts the input tokens of req as the model would bill
// them: every message's text and tool calls, and the tool definitions.
func requestTokens(c prompt.Counter, req llmtest.ChatRequest) int {
	n := prompt.ReplyPriming
	for _, m := range req.Messages {
		n += prompt.MessageOverhead + c.Count(m.Text())
		for _, tc := range m.ToolCalls {
			n += c.Count(tc.Function.Name) + c.Count(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += prompt.ToolCallOverhead + c.Count(t.Function.Name) + c.Count(t.Function.Description) + c.Count(string(t.Function.Parameters))
	}
	return n
}

// benchWords are common English words the benchmark's texts are made of.
var benchWords = strings.Fields(`the a to and of in is it you that for on with this can be have I my
what about we do not are at how if so should but or your could there from would just some more like time
day week plan garden trip train book call meeting budget project report draft idea list note work home
family friend morning evening weekend today tomorrow next last good better best new old small large early
late price ticket hotel city river music piano lesson run walk dinner lunch recipe market store bank
letter email message question answer reason problem solution option choice change move start finish`)

// benchText returns n words from benchWords in sentences.
func benchText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := range n {
		w := benchWords[r.IntN(len(benchWords))]
		switch {
		case i == 0 || sb.String()[sb.Len()-1] == '.':
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
		default:
			sb.WriteByte(' ')
			sb.WriteString(w)
		}
		if i%12 == 11 {
			sb.WriteByte('.')
		}
	}
	return sb.String()
}

func benchEnvInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// profiler writes CPU profiles of parts of a run (REVERIE_BENCH_PROFILE):
// PREFIX-early.pprof for turns 6–105 and PREFIX-late.pprof for the last 100
// turns, so that `go tool pprof -diff_base PREFIX-early.pprof
// PREFIX-late.pprof` shows what grows with the conversation. Only the first
// run is profiled.
type profiler struct {
	b      *testing.B
	prefix string
	f      *os.File
}

func (p *profiler) start(part string) {
	if p.prefix == "" {
		return
	}
	f, err := os.Create(p.prefix + "-" + part + ".pprof")
	if err != nil {
		p.b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		p.b.Logf("no %s profile: %v (is -cpuprofile set too?)", part, err)
		return
	}
	p.f = f
}

func (p *profiler) stop() {
	if p.f == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := p.f.Close(); err != nil {
		p.b.Error(err)
	}
	p.f = nil
}

func TestConversationTexts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lme.json")
	data := `[
 {"haystack_session_ids": ["s1", "s2"], "haystack_sessions": [
   [{"role": "user", "content": "m1"}, {"role": "assistant", "content": "r1"}, {"role": "user", "content": "m2"}],
   [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "m3"}, {"role": "assistant", "content": "r3"}]]},
 {"haystack_session_ids": ["s2", "s3"], "haystack_sessions": [
   [{"role": "user", "content": "m3"}, {"role": "assistant", "content": "r3"}],
   [{"role": "user", "content": " "}, {"role": "assistant", "content": "r4"}, {"role": "user", "content": "m5"}, {"role": "assistant", "content": "r5"}]]},
 {"broken": `
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		n    int
		want []exchangeText
		err  string
	}{
		{"each session once, a message with the reply after it", 3, []exchangeText{{"m1", "r1"}, {"m3", "r3"}, {"m5", "r5"}}, ""},
		{"only the questions needed are read", 2, []exchangeText{{"m1", "r1"}, {"m3", "r3"}}, ""},
		{"too few exchanges", 4, nil, "read conversations from"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := conversationTexts(file, c.n)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one holding %q", err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("conversationTexts = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

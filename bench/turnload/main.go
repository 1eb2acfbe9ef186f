// Command turnload drives real turns through Reverie's HTTP API, the way a
// client of the web page or of `reverie chat --remote` sends them, against
// the fake OpenAI-compatible model of llm/llmtest (it answers at once, so
// what is measured is Reverie's own cost). Each build runs as its own
// `BIN agent` process on a data dir made with `BIN init`, with its default
// configuration (episodes on) unless told otherwise.
//
//	go run ./bench/turnload footprint [-turns 20,500,1500,2500] [-settle 60s] [-embedding M] BIN
//	go run ./bench/turnload concurrency [-clients 20] [-turns 20] [-runs 5] [-episodes=false] [-each] [-embedding M] BIN [BIN…]
//	go run ./bench/turnload memories [-n 10000,100000] [-settle 60s] [-embedding M] BIN
//
// -embedding M sets the agents' memory.embedding.model to M (through
// REVERIE_MEMORY__EMBEDDING__MODEL; empty: the build's default, the
// sentence encoder built into the binary, builtin/use-lite), such as
// builtin/hashing, the offline hashing embedder.
//
// footprint: the agent's private memory (RssAnon, from /proc/PID/status),
// its proportional set size (Pss, from /proc/PID/smaps_rollup: it also
// counts the file pages it maps, its executable's shared with any other
// process running the same file) and, of that, the pages of the memory
// indexes' files (the vectors, their sketches, the memories' metadata and
// the text index's term ids: internal/memory's vecSpace) and its number of
// OS threads, once idle (-settle after ready), then, in one conversation,
// right after each checkpoint's turn and again -settle after it (the agent
// idle in between: what it keeps, once its footprint keeper has run).
//
// concurrency: -clients clients each send -turns messages, one after the
// other, each client in its own conversation, all at once; the figure is
// turns per second over the whole load (first send to last reply). Every
// run starts each build afresh on a new data dir (init, start, one warm-up
// turn); the builds' runs are interleaved (A B A B …) so that a shared
// machine slows them alike; the medians are given with their ratio to the
// first build's, and with the median of the paired ratios (each round's run
// over the first build's run of the same round).
//
// memories: the agent's RssAnon and Pss (and the index files' share of
// it) on a data dir holding N long-term memories (a fifth of each kind,
// episodes in 50 conversations; stored through the memory store with the
// sentence encoder, or with the offline hashing embedder when -embedding is
// builtin/hashing, as the agent stores them: a build whose default differs,
// or another -embedding model, re-embeds them in the background at its
// start), -settle after ready
// (the index loads in the background) and -settle after one turn (which
// recalls from them).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reverie-ai/reverie/api/client"
	"github.com/reverie-ai/reverie/bench/benchproc"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

const usage = `usage:
  turnload footprint [-turns 20,500,1500,2500] [-settle 60s] [-episodes=true] [-embedding MODEL] BIN
  turnload concurrency [-clients 20] [-turns 20] [-runs 5] [-episodes=true] [-each] [-embedding MODEL] BIN [BIN…]
  turnload memories [-n 10000,100000] [-settle 60s] [-embedding MODEL] BIN`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	o := &owner{}
	defer o.close()
	// An interrupt stops the agents under test before the command ends.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "footprint":
		err = footprintCmd(ctx, o, os.Args[2:])
	case "concurrency":
		err = concurrencyCmd(ctx, o, os.Args[2:])
	case "memories":
		err = memoriesCmd(ctx, o, os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		o.close()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "turnload:", err)
		o.close()
		os.Exit(1)
	}
}

// owner runs the fake model server (llmtest.Owner): it closes it at the
// end and reports calls it was not programmed for.
type owner struct {
	mu       sync.Mutex
	cleanups []func()
}

var _ llmtest.Owner = (*owner)(nil)

func (o *owner) Cleanup(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cleanups = append(o.cleanups, f)
}

func (o *owner) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "turnload: model server: "+format+"\n", args...)
}

func (o *owner) close() {
	o.mu.Lock()
	fs := o.cleanups
	o.cleanups = nil
	o.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

// reply is what the fake model answers to every call: a short paragraph,
// about what a chat reply is.
const reply = "Noted. Here is a short answer of about the length a chat reply has: a couple of sentences " +
	"that restate the question, give the point, and offer to go on if you want more detail."

// startModel serves the fake model and returns the environment that points
// an agent at it.
func startModel(o *owner) []string {
	m := llmtest.NewOpenAIServer(o)
	m.DiscardRequests()
	m.Handle(func(llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: reply, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 40}}
	})
	return []string{"OPENAI_BASE_URL=" + m.BaseURL(), "OPENAI_API_KEY=sk-bench", "REVERIE_MODEL=gpt-test"}
}

// agent is one running `BIN agent`.
type agent struct {
	cmd    *exec.Cmd
	exited chan error
	stderr *strings.Builder
	client *client.Client
}

// initData makes a fresh data dir with `BIN init`.
func initData(bin, dir string) error {
	if out, err := exec.Command(bin, "init", "--data", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("%s init: %v: %s", bin, err, out)
	}
	return nil
}

// startAgent starts `BIN agent` on dir and waits until /healthz answers.
func startAgent(bin, dir string, env []string) (*agent, error) {
	port, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "agent", "--data", dir)
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "REVERIE_WEB__LISTEN=127.0.0.1:"+strconv.Itoa(port), "REVERIE_WEB__RATE_PER_SECOND=0")
	a := &agent{cmd: cmd, exited: make(chan error, 1), stderr: &strings.Builder{}}
	cmd.Stderr = a.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s agent: %w", bin, err)
	}
	go func() { a.exited <- cmd.Wait() }()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := hc.Get(base + "/healthz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-a.exited:
			return nil, fmt.Errorf("%s agent exited before ready (%v): %s", bin, err, a.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, fmt.Errorf("%s agent not ready after 60 s", bin)
		}
		time.Sleep(10 * time.Millisecond)
	}
	token, err := os.ReadFile(filepath.Join(dir, "secrets", "web_token"))
	if err != nil {
		a.stop()
		return nil, fmt.Errorf("read the access token: %w", err)
	}
	a.client, err = client.New(base, strings.TrimSpace(string(token)))
	if err != nil {
		a.stop()
		return nil, err
	}
	return a, nil
}

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (a *agent) stop() {
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		a.cmd.Process.Kill()
		<-a.exited
	}
}

// send runs one turn and checks that the model's reply came back.
func (a *agent) send(ctx context.Context, thread chat.ThreadID, text string) error {
	r, err := a.client.Send(ctx, thread, text)
	if err != nil {
		return fmt.Errorf("send on %s: %w", thread, err)
	}
	if r.Error != "" || !strings.Contains(r.Reply, "Noted.") {
		return fmt.Errorf("turn on %s failed: %q %s", thread, r.Reply, r.Error)
	}
	return nil
}

// message is the n-th user message of a conversation: varied, about the
// length of a chat message.
func message(client, n int) string {
	return fmt.Sprintf("Message %d from client %d: remind me what we said about the plan for week %d, "+
		"and add that Anna prefers the %s option.", n, client, n%52+1, []string{"early", "late", "cheaper", "quiet"}[n%4])
}

// episodesEnv turns episodes off when asked; on is the default (and
// builds from before episodes existed know no such setting).
func episodesEnv(on bool) []string {
	if on {
		return nil
	}
	return []string{"REVERIE_MEMORY__EPISODES=false"}
}

// embeddingEnv sets memory.embedding.model to model; empty leaves the
// build's default.
func embeddingEnv(model string) []string {
	if model == "" {
		return nil
	}
	return []string{"REVERIE_MEMORY__EMBEDDING__MODEL=" + model}
}

// embeddingFlag declares -embedding on fs.
func embeddingFlag(fs *flag.FlagSet) *string {
	return fs.String("embedding", "", "memory.embedding.model of the agents (empty: the build's default), e.g. "+config.EmbeddingBuiltinHashing)
}

// indexFiles is in the name of the memory index's unlinked files (see
// internal/memory's vecSpace).
const indexFiles = ".memory-vectors-"

func footprintCmd(ctx context.Context, o *owner, args []string) error {
	fs := flag.NewFlagSet("footprint", flag.ExitOnError)
	turnsFlag := fs.String("turns", "20,500,1500,2500", "checkpoints: total turns in the conversation, ascending")
	settle := fs.Duration("settle", 60*time.Second, "idle wait before each second sample")
	episodes := fs.Bool("episodes", true, "memory.episodes")
	embedding := embeddingFlag(fs)
	hold := fs.Duration("hold", 0, "keep the agent running this long after the last sample (to profile it)")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New(usage)
	}
	var checkpoints []int
	for f := range strings.SplitSeq(*turnsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(checkpoints) > 0 && n <= checkpoints[len(checkpoints)-1]) {
			return fmt.Errorf("-turns: %q is not an ascending list of counts", *turnsFlag)
		}
		checkpoints = append(checkpoints, n)
	}
	bin, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "turnload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "data")
	if err := initData(bin, dir); err != nil {
		return err
	}
	env := append(append(startModel(o), episodesEnv(*episodes)...), embeddingEnv(*embedding)...)
	a, err := startAgent(bin, dir, env)
	if err != nil {
		return err
	}
	defer a.stop()
	pid := a.cmd.Process.Pid
	sample := func(label string) error {
		kib, err1 := benchproc.RssAnon(pid)
		p, err2 := benchproc.Pss(pid)
		idx, err3 := benchproc.MappedPss(pid, indexFiles)
		threads, err4 := benchproc.Threads(pid)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return err
		}
		fmt.Printf("  %-34s RssAnon %6d KiB (%5.1f MiB)  Pss %6d KiB, of it index files %5d KiB  threads %2d\n", label, kib, float64(kib)/1024, p, idx, threads)
		return nil
	}
	fmt.Printf("%s agent, fresh data dir, episodes %v, embedding %q, one conversation:\n", bin, *episodes, *embedding)
	if err := extension.Sleep(ctx, *settle); err != nil {
		return err
	}
	if err := sample(fmt.Sprintf("idle, %v after ready", *settle)); err != nil {
		return err
	}
	thread := chat.ThreadID("web:footprint")
	done := 0
	for _, n := range checkpoints {
		t0, from := time.Now(), done
		for ; done < n; done++ {
			if err := a.send(ctx, thread, message(0, done)); err != nil {
				return err
			}
		}
		if err := sample(fmt.Sprintf("after %d turns (%.1f ms/turn)", n, ms(time.Since(t0))/float64(n-from))); err != nil {
			return err
		}
		if err := extension.Sleep(ctx, *settle); err != nil {
			return err
		}
		if err := sample(fmt.Sprintf("after %d turns, %v later", n, *settle)); err != nil {
			return err
		}
	}
	if *hold > 0 {
		fmt.Printf("  holding agent (pid %d) for %v\n", pid, *hold)
		return extension.Sleep(ctx, *hold)
	}
	return nil
}

func concurrencyCmd(ctx context.Context, o *owner, args []string) error {
	fs := flag.NewFlagSet("concurrency", flag.ExitOnError)
	clients := fs.Int("clients", 20, "clients sending at once, each in its own conversation")
	turns := fs.Int("turns", 20, "turns per client")
	runs := fs.Int("runs", 5, "measured runs per build")
	episodes := fs.Bool("episodes", true, "memory.episodes")
	each := fs.Bool("each", false, "print each run's figures (and the agent's pid) as it ends")
	embedding := embeddingFlag(fs)
	fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New(usage)
	}
	work, err := os.MkdirTemp("", "turnload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	env := append(append(startModel(o), episodesEnv(*episodes)...), embeddingEnv(*embedding)...)
	bins := make([]string, fs.NArg())
	for i, b := range fs.Args() {
		if bins[i], err = filepath.Abs(b); err != nil {
			return err
		}
	}
	rates := make([][]float64, len(bins))
	cpus := make([][]float64, len(bins))
	for r := range *runs {
		for i, bin := range bins {
			dir := filepath.Join(work, fmt.Sprintf("data-%d-%d", i, r))
			res, err := loadOnce(ctx, bin, dir, env, *clients, *turns)
			if err != nil {
				return err
			}
			rates[i] = append(rates[i], res.rate)
			cpus[i] = append(cpus[i], res.cpu)
			if *each {
				fmt.Printf("  run %d %-40s %7.2f turns/s %6.2f ms/turn  pid %d\n", r, bin, res.rate, res.cpu, res.pid)
			}
			os.RemoveAll(dir)
		}
	}
	fmt.Printf("%d clients × %d turns through HTTP, episodes %v, embedding %q, %d interleaved runs per build:\n",
		*clients, *turns, *episodes, *embedding, *runs)
	report("turns/s", bins, rates)
	report("agent CPU ms/turn", bins, cpus)
	return nil
}

// report prints each build's median, min and max of one figure, the
// ratio of its median to the first build's, and the median of its paired
// ratios: each run's figure over the first build's in the same round (run
// just before it), which a shared machine's swings of load between rounds
// move less.
func report(what string, bins []string, figs [][]float64) {
	fmt.Printf(" %s:\n", what)
	var base float64
	for i, bin := range bins {
		rs := slices.Clone(figs[i])
		slices.Sort(rs)
		med := rs[len(rs)/2]
		if i == 0 {
			base = med
		}
		paired := make([]float64, len(figs[i]))
		for r, f := range figs[i] {
			paired[r] = f / figs[0][r]
		}
		slices.Sort(paired)
		fmt.Printf("  %-40s median %7.2f  min %7.2f  max %7.2f  ratio %.2f  paired %.2f\n", bin, med, rs[0], rs[len(rs)-1], med/base, paired[len(paired)/2])
	}
}

// loadOnce starts bin on a fresh data dir and runs the load once; it
// returns turns per second.
func loadOnce(ctx context.Context, bin, dir string, env []string, clients, turns int) (result, error) {
	if err := initData(bin, dir); err != nil {
		return result{}, err
	}
	a, err := startAgent(bin, dir, env)
	if err != nil && strings.Contains(err.Error(), `unknown key "memory.episodes"`) {
		// A build from before episodes existed (such as bbc15b5).
		a, err = startAgent(bin, dir, slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
			return strings.HasPrefix(kv, "REVERIE_MEMORY__EPISODES=")
		}))
	}
	if err != nil {
		return result{}, err
	}
	defer a.stop()
	if err := a.send(ctx, "web:warmup", "hello"); err != nil {
		return result{}, err
	}
	cpu0, err := cpuTime(a.cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	errs := make(chan error, clients)
	t0 := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			thread := chat.ThreadID(fmt.Sprintf("web:client%d", c))
			for n := range turns {
				if err := a.send(ctx, thread, message(c, n)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(t0)
	cpu1, err := cpuTime(a.cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	n := float64(clients * turns)
	return result{rate: n / d.Seconds(), cpu: ms(cpu1-cpu0) / n, pid: a.cmd.Process.Pid}, nil
}

// result is one load's figures: turns per second, and the agent's CPU
// time (user and system) per turn in ms, and the agent's process id.
type result struct {
	rate, cpu float64
	pid       int
}

// cpuTime is the CPU time the process has used (utime + stime of
// /proc/PID/stat).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(u+s) * tick, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func memoriesCmd(ctx context.Context, o *owner, args []string) error {
	fs := flag.NewFlagSet("memories", flag.ExitOnError)
	counts := fs.String("n", "10000,100000", "numbers of memories, one data dir each")
	settle := fs.Duration("settle", 60*time.Second, "idle wait before each sample")
	embedding := embeddingFlag(fs)
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New(usage)
	}
	bin, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	env := append(startModel(o), embeddingEnv(*embedding)...)
	var emb embed.Embedder = embed.NewOffline(embed.DefaultDimensions)
	if *embedding != config.EmbeddingBuiltinHashing {
		if emb, err = sentence.New(); err != nil {
			return err
		}
	}
	for f := range strings.SplitSeq(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return fmt.Errorf("-n: %q is not a list of counts", *counts)
		}
		if err := memoriesOnce(ctx, bin, env, emb, n, *settle); err != nil {
			return err
		}
	}
	return nil
}

func memoriesOnce(ctx context.Context, bin string, env []string, emb embed.Embedder, n int, settle time.Duration) error {
	work, err := os.MkdirTemp("", "turnload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "data")
	if err := initData(bin, dir); err != nil {
		return err
	}
	// The first start makes reverie.db with every component's tables.
	a, err := startAgent(bin, dir, env)
	if err != nil {
		return err
	}
	a.stop()
	t0 := time.Now()
	if err := seedMemories(ctx, filepath.Join(dir, "reverie.db"), emb, n); err != nil {
		return err
	}
	fmt.Printf("%s agent, %d memories (stored in %.0f s):\n", bin, n, time.Since(t0).Seconds())
	if a, err = startAgent(bin, dir, env); err != nil {
		return err
	}
	defer a.stop()
	pid := a.cmd.Process.Pid
	sample := func(label string) error {
		anon, err1 := benchproc.RssAnon(pid)
		p, err2 := benchproc.Pss(pid)
		idx, err3 := benchproc.MappedPss(pid, indexFiles)
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		fmt.Printf("  %-34s RssAnon %7d KiB (%5.1f MiB)  Pss %7d KiB, of it index files %6d KiB\n", label, anon, float64(anon)/1024, p, idx)
		return nil
	}
	if err := extension.Sleep(ctx, settle); err != nil {
		return err
	}
	if err := sample(fmt.Sprintf("idle, %v after ready", settle)); err != nil {
		return err
	}
	if err := a.send(ctx, "web:memories", "what did Anna say about the trip to Lyon?"); err != nil {
		return err
	}
	if err := extension.Sleep(ctx, settle); err != nil {
		return err
	}
	return sample(fmt.Sprintf("one turn, %v later", settle))
}

// seedMemories stores n synthetic memories in the database at path through
// the memory store, with the embedder emb (the agent's).
func seedMemories(ctx context.Context, path string, emb embed.Embedder, n int) error {
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := memory.OpenVector(ctx, db, emb, nil, nil, memory.DefaultTuning)
	if err != nil {
		return err
	}
	defer s.Shutdown(ctx)
	r := rand.New(rand.NewPCG(1, 2))
	const batch = 500
	for i := 0; i < n; i += batch {
		ms := make([]memory.Memory, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			m := memory.Memory{Text: memoryText(r, j), Kind: memory.Kinds[j%len(memory.Kinds)]}
			if m.Kind == memory.KindEpisode {
				// episodes of 50 conversations, 40 per session
				m.Source, m.Thread, m.Session, m.Role = memory.SourceConversation, "web:c"+strconv.Itoa(j%50), strconv.Itoa(j/2000), memory.RoleUser
			}
			ms = append(ms, m)
		}
		if _, err := s.AddBatch(ctx, ms); err != nil {
			return fmt.Errorf("store memories: %w", err)
		}
	}
	return nil
}

var (
	seedNames  = []string{"Anna", "Ben", "Chloé", "Dmitri", "Emeka", "Fatima", "Giulia", "Hiro", "Ines", "Jonas"}
	seedThings = []string{"bike", "garden", "piano", "boat", "kitchen", "camera", "novel", "tent", "violin", "car"}
	seedPlaces = []string{"Lyon", "Oslo", "Kyoto", "Lisbon", "Nairobi", "Quebec", "Porto", "Seville", "Tallinn", "Cusco"}
	seedTimes  = []string{"last May", "in 2023", "yesterday", "two weeks ago", "on Sunday", "every spring"}
)

// memoryText is the i-th synthetic memory: varied words, unique by its
// number.
func memoryText(r *rand.Rand, i int) string {
	p := func(l []string) string { return l[r.IntN(len(l))] }
	switch r.IntN(3) {
	case 0:
		return fmt.Sprintf("%s fixed the %s in %s %s and said it was worth it (#%d)", p(seedNames), p(seedThings), p(seedPlaces), p(seedTimes), i)
	case 1:
		return fmt.Sprintf("The user prefers the %s over the %s, especially with %s (#%d)", p(seedThings), p(seedThings), p(seedNames), i)
	default:
		return fmt.Sprintf("%s: we took the %s to %s %s for the weekend (#%d)", p(seedNames), p(seedThings), p(seedPlaces), p(seedTimes), i)
	}
}

// Command starttime measures how long Reverie takes to start and to answer a
// one-shot message, for one or more builds side by side: the runs of the
// builds are interleaved (A B C A B C …) so that a noisy, shared machine
// slows them alike, and each build's median is also given as a ratio to the
// first build's.
//
//	go run ./bench/starttime [-runs 9] [-mode start|run|send] BIN [BIN…]
//
// Mode start: `BIN agent` on an existing data dir (one per build, `init`ed
// and started once before measuring), from the fork to the first 200 from
// /healthz, polled every 0.5 ms over loopback.
//
// Mode run: the same with `BIN run`: the supervisor, then its agent child.
// With reverie-supervisor next to BIN, `run` hands over to it (one more
// exec); a BIN alone in its directory supervises in process.
//
// Mode send: the whole process `BIN send hi` against a local
// OpenAI-compatible model served by this command (it answers at once, so
// the figure is Reverie's own cost), from the fork to the exit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/reverie-ai/reverie/bench/benchproc"
)

func main() {
	runs := flag.Int("runs", 9, "measured runs per build")
	mode := flag.String("mode", "start", "start (`agent` to /healthz 200), run (`run` to /healthz 200) or send (one-shot `reverie send hi`)")
	flag.Parse()
	if flag.NArg() == 0 || (*mode != "start" && *mode != "run" && *mode != "send") {
		fmt.Fprintln(os.Stderr, "usage: starttime [-runs N] [-mode start|run|send] BIN [BIN…]")
		os.Exit(2)
	}
	if err := run(*mode, *runs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "starttime:", err)
		os.Exit(1)
	}
}

// build is one binary under test with its own data dir.
type build struct {
	bin   string
	data  string
	times []time.Duration
}

func run(mode string, runs int, bins []string) error {
	work, err := os.MkdirTemp("", "starttime")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	port, err := benchproc.FreePort()
	if err != nil {
		return err
	}
	env := append(os.Environ(), fmt.Sprintf("REVERIE_WEB__LISTEN=127.0.0.1:%d", port))
	if mode == "send" {
		model, stop, err := serveModel()
		if err != nil {
			return err
		}
		defer stop()
		env = append(env, "OPENAI_BASE_URL="+model, "OPENAI_API_KEY=local", "REVERIE_MODEL=local")
	}
	measure := func(b *build) (time.Duration, error) {
		if mode == "send" {
			return sendOnce(b, env)
		}
		if mode == "run" {
			return startOnce(b, "run", env, port)
		}
		return startOnce(b, "agent", env, port)
	}

	builds := make([]*build, len(bins))
	for i, bin := range bins {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		b := &build{bin: abs, data: filepath.Join(work, fmt.Sprintf("data%d", i))}
		if out, err := exec.Command(abs, "init", "--data", b.data).CombinedOutput(); err != nil {
			return fmt.Errorf("%s init: %v: %s", bin, err, out)
		}
		// The first start creates reverie.db: every measured one is on an
		// existing data dir.
		if _, err := measure(b); err != nil {
			return fmt.Errorf("%s warm-up: %w", bin, err)
		}
		builds[i] = b
	}
	for range runs {
		for _, b := range builds {
			d, err := measure(b)
			if err != nil {
				return fmt.Errorf("%s: %w", b.bin, err)
			}
			b.times = append(b.times, d)
		}
	}
	what := "start to /healthz 200"
	if mode == "run" {
		what = "`run` start to /healthz 200"
	}
	if mode == "send" {
		what = "`send hi`, whole process"
	}
	fmt.Printf("%s, %d interleaved runs per build (ms):\n", what, runs)
	var base float64
	for i, b := range builds {
		slices.Sort(b.times)
		med := ms(b.times[len(b.times)/2])
		if i == 0 {
			base = med
		}
		fmt.Printf("  %-40s median %6.1f  min %6.1f  max %6.1f  ratio %.2f\n",
			bins[i], med, ms(b.times[0]), ms(b.times[len(b.times)-1]), med/base)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// startOnce starts `command` (agent or run), waits for /healthz 200 and
// stops it again.
func startOnce(b *build, command string, env []string, port int) (time.Duration, error) {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	cmd := exec.Command(b.bin, command, "--data", b.data)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	exited := make(chan error, 1)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { exited <- cmd.Wait() }()
	deadline := t0.Add(30 * time.Second)
	for {
		if resp, err := client.Get(url); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			return 0, fmt.Errorf("%s exited before ready (%v): %s", command, err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return 0, errors.New("not ready after 30 s")
		}
		time.Sleep(500 * time.Microsecond)
	}
	d := time.Since(t0)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		return 0, fmt.Errorf("%s did not stop within 30 s of SIGTERM", command)
	}
	return d, nil
}

// sendOnce runs `send hi` to its exit.
func sendOnce(b *build, env []string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, "send", "--data", b.data, "hi")
	cmd.Env = env
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("send: %v: %s", err, out)
	}
	if !strings.Contains(string(out), localReply) {
		return 0, fmt.Errorf("send printed %q, not the model's reply", out)
	}
	return d, nil
}

// localReply is what the local model answers.
const localReply = "Hello from the local model."

// serveModel serves a minimal OpenAI-compatible model on loopback (chat
// completions, streamed or not, and the model list) and returns its base URL.
func serveModel() (baseURL string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"local","object":"model","created":0,"owned_by":"local"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		usage := `{"prompt_tokens":10,"completion_tokens":6,"total_tokens":16}`
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"local\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":null}]}\n\n", localReply)
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"local\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":%s}\n\n", usage)
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":0,"model":"local","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":%s}`, localReply, usage)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	return "http://" + l.Addr().String() + "/v1", func() { srv.Close() }, nil
}

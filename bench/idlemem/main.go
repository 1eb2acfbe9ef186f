// Command idlemem measures the idle private memory of `reverie agent` for
// one or more builds side by side: each round starts AGENTS agents of every
// build together, interleaved (A B C A B C …, each with its own data dir
// and port), so that a noisy, shared machine weighs on the builds alike;
// each agent's RssAnon (/proc/PID/status: heap, stacks, Go runtime, the C
// heap: what the process alone pays) is read AFTER after its /healthz first
// answers 200, then the agent is stopped. Each build's median over all its
// agents is also given as a ratio to the first build's.
//
//	go run ./bench/idlemem [-agents 3] [-rounds 2] [-after 12s] [-fresh] BIN [BIN…]
//
// By default every data dir is `init`ed and started once before measuring
// (an existing data dir); with -fresh each agent gets a data dir just
// `init`ed, so its start creates reverie.db and runs the migrations.
// No model is configured: this is the idle footprint (bench/footprint.sh
// has the same figure for one build over time).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reverie-ai/reverie/bench/benchproc"
)

func main() {
	agents := flag.Int("agents", 3, "agents of each build started together in a round")
	rounds := flag.Int("rounds", 2, "rounds")
	after := flag.Duration("after", 12*time.Second, "how long after ready RssAnon is read")
	fresh := flag.Bool("fresh", false, "a freshly `init`ed data dir for every agent (default: existing data dirs)")
	flag.Parse()
	if flag.NArg() == 0 || *agents < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: idlemem [-agents N] [-rounds N] [-after D] [-fresh] BIN [BIN…]")
		os.Exit(2)
	}
	if err := run(*agents, *rounds, *after, *fresh, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "idlemem:", err)
		os.Exit(1)
	}
}

// agent is one agent slot: a build's binary with its own data dir.
type agent struct {
	bin   string
	data  string
	build int
}

func run(agents, rounds int, after time.Duration, fresh bool, bins []string) error {
	work, err := os.MkdirTemp("", "idlemem")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var slots []*agent
	for range agents {
		for i, bin := range bins {
			abs, err := filepath.Abs(bin)
			if err != nil {
				return err
			}
			slots = append(slots, &agent{bin: abs, build: i, data: filepath.Join(work, fmt.Sprintf("data%d", len(slots)))})
		}
	}
	prepare := func(a *agent) error {
		if err := os.RemoveAll(a.data); err != nil {
			return err
		}
		if out, err := exec.Command(a.bin, "init", "--data", a.data).CombinedOutput(); err != nil {
			return fmt.Errorf("%s init: %v: %s", a.bin, err, out)
		}
		return nil
	}
	if !fresh {
		// The first start creates reverie.db: every measured one is on an
		// existing data dir.
		for _, a := range slots {
			if err := prepare(a); err != nil {
				return err
			}
			if _, err := idleOnce(a, 0); err != nil {
				return fmt.Errorf("%s warm-up: %w", a.bin, err)
			}
		}
	}
	samples := make([][]int, len(bins))
	for range rounds {
		if fresh {
			for _, a := range slots {
				if err := prepare(a); err != nil {
					return err
				}
			}
		}
		got := make([]int, len(slots))
		errs := make([]error, len(slots))
		var wg sync.WaitGroup
		for i, a := range slots {
			wg.Go(func() { got[i], errs[i] = idleOnce(a, after) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for i, a := range slots {
			samples[a.build] = append(samples[a.build], got[i])
		}
	}
	dir := "existing"
	if fresh {
		dir = "fresh"
	}
	fmt.Printf("idle RssAnon %s after ready, %s data dirs, %d agents per build × %d rounds, started together (MiB):\n", after, dir, agents, rounds)
	var base float64
	for i, s := range samples {
		slices.Sort(s)
		med := mib(s[len(s)/2])
		if len(s)%2 == 0 {
			med = (mib(s[len(s)/2-1]) + mib(s[len(s)/2])) / 2
		}
		if i == 0 {
			base = med
		}
		fmt.Printf("  %-40s median %6.2f  min %6.2f  max %6.2f  ratio %.3f\n", bins[i], med, mib(s[0]), mib(s[len(s)-1]), med/base)
	}
	return nil
}

func mib(kib int) float64 { return float64(kib) / 1024 }

// idleOnce starts `agent` on a's data dir, waits for /healthz 200, reads its
// RssAnon `after` later (in KiB) and stops it again.
func idleOnce(a *agent, after time.Duration) (int, error) {
	port, err := benchproc.FreePort()
	if err != nil {
		return 0, err
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	cmd := exec.Command(a.bin, "agent", "--data", a.data)
	cmd.Env = append(os.Environ(), fmt.Sprintf("REVERIE_WEB__LISTEN=127.0.0.1:%d", port))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			return errors.New("agent did not stop within 30 s of SIGTERM")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			return 0, fmt.Errorf("agent exited before ready (%v): %s", err, stderr.String())
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return 0, errors.New("agent not ready after 60 s")
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case err := <-exited:
		return 0, fmt.Errorf("agent exited while idle (%v): %s", err, stderr.String())
	case <-time.After(after):
	}
	kib, err := benchproc.RssAnon(cmd.Process.Pid)
	if serr := stop(); err == nil {
		err = serr
	}
	return int(kib), err
}

package shell

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// limitSetups are the sandboxed setups of this machine, each with the
// limits enforced by cgroups where they work and by resource limits alone.
func limitSetups(t *testing.T, l Limits) []setup {
	t.Helper()
	var out []setup
	for _, su := range sandboxedSetups(t, false) {
		cg := su
		cg.name += "/cgroups"
		cg.cfg.Limits = l
		rl := su
		rl.name += "/rlimits"
		rl.cfg.Limits, rl.cfg.noCgroup = l, true
		out = append(out, cg, rl)
	}
	return out
}

// leftoverCgroups lists the cgroups this test process created and did not
// remove.
func leftoverCgroups(t *testing.T) []string {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		matches, _ := filepath.Glob(filepath.Join(m, "*", fmt.Sprintf("reverie-shell-%d-*", os.Getpid())))
		more, _ := filepath.Glob(filepath.Join(m, "*", "*", fmt.Sprintf("reverie-shell-%d-*", os.Getpid())))
		top, _ := filepath.Glob(filepath.Join(m, fmt.Sprintf("reverie-shell-%d-*", os.Getpid())))
		out = append(append(append(out, matches...), more...), top...)
	}
	return out
}

// hostCanFork runs a process on the host: the limits bound the sandbox,
// not Reverie.
func hostCanFork(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("/bin/sh", "-c", "echo host-ok").CombinedOutput(); err != nil || string(out) != "host-ok\n" {
		t.Fatalf("the host cannot start a process after the command: %v %q", err, out)
	}
}

// TestLimitsStopRunaways runs a fork bomb, a memory hog, a big write and a
// busy loop in every sandbox setup and checks that the limits stop each,
// that the result names the limit when it can be told, that nothing of the
// command is left and that the host still starts processes.
func TestLimitsStopRunaways(t *testing.T) {
	lim := Limits{Processes: 48, Memory: 96 << 20, FileSize: 4 << 20, CPUSeconds: 1}
	for _, su := range limitSetups(t, lim) {
		t.Run(su.name, func(t *testing.T) {
			cfg := su.cfg
			cfg.DefaultTimeout = 60 * time.Second
			s := newShell(t, cfg)
			t.Logf("Status() = %s", s.Status())
			if s.Sandbox() != su.want {
				t.Fatalf("Sandbox() = %q; want %q", s.Sandbox(), su.want)
			}
			cgroups := s.limits.Load().cg != nil
			if cfg.noCgroup && cgroups {
				t.Fatal("cgroups used although disabled")
			}
			for _, w := range []string{"file size 4 MiB", "cpu 1s per process"} {
				if !strings.Contains(s.Limits(), w) {
					t.Fatalf("Limits() = %q; want %q in it", s.Limits(), w)
				}
			}

			t.Run("fork bomb", func(t *testing.T) {
				if !strings.Contains(s.Limits(), "processes 48") {
					if missing := s.limits.Load().missing; !strings.Contains(missing, "processes not limited") {
						t.Fatalf("processes neither limited (%q) nor reported missing (%q)", s.Limits(), missing)
					}
					t.Skipf("no process limit here (%s): a fork bomb would exhaust the host", s.limits.Load().missing)
				}
				// Processes are started until a fork is refused: the shell
				// (dash) gives up at the first refusal. A recursive bomb
				// in the background (bomb | bomb &) let the command end
				// before the limit was reached when the machine was
				// loaded (1 run in 120 under load 9): its children were
				// then stopped with the command, no fork refused.
				res, err := s.Run(t.Context(), Args{Command: `while :; do sleep 30 & done`})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("exit %d, timed out %v, hit %v, output %.200q", res.ExitCode, res.TimedOut, res.LimitHit, res.Output)
				if cgroups && !slices.Contains(res.LimitHit, LimitProcesses) {
					t.Fatalf("LimitHit = %v; want processes (note %q)", res.LimitHit, res.Note)
				}
				if !cgroups && !strings.Contains(res.Output, "fork") {
					t.Fatalf("output %.300q; want the refused forks reported", res.Output)
				}
				hostCanFork(t)
			})

			t.Run("memory hog", func(t *testing.T) {
				// tail keeps a line without newline whole: it allocates until stopped.
				res, err := s.Run(t.Context(), Args{Command: `head -c 2000000000 /dev/zero | tail; echo "tail exited $?"`})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("exit %d, hit %v, output %.200q", res.ExitCode, res.LimitHit, res.Output)
				if res.TimedOut || strings.Contains(res.Output, "tail exited 0") {
					t.Fatalf("the hog was not stopped: %+v", res)
				}
				if cgroups && s.limits.Load().cg.has(ctrlMemory) {
					if !slices.Contains(res.LimitHit, LimitMemory) || !strings.Contains(res.Note, "memory limit") {
						t.Fatalf("LimitHit = %v, note %q; want memory", res.LimitHit, res.Note)
					}
				} else if !strings.Contains(res.Output, "memory exhausted") {
					t.Fatalf("output %q; want tail's failed allocation", res.Output)
				}
				hostCanFork(t)
			})

			t.Run("big write", func(t *testing.T) {
				res, err := s.Run(t.Context(), Args{Command: `dd if=/dev/zero of=big bs=1M count=64 2>/dev/null`})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(res.LimitHit, LimitFileSize) || !strings.Contains(res.Note, "file size limit") {
					t.Fatalf("LimitHit = %v, note %q, exit %d; want file_size", res.LimitHit, res.Note, res.ExitCode)
				}
				info, err := os.Stat(filepath.Join(s.cfg.Workspace.Dir(), "big"))
				if err != nil || info.Size() != 4<<20 {
					t.Fatalf("big: %v, %d bytes; want exactly the 4 MiB limit", err, info.Size())
				}
			})

			t.Run("filling /tmp", func(t *testing.T) {
				if s.bwrap == "" {
					t.Skip("without bubblewrap /tmp is a directory on the host's disk: only the file size limit applies")
				}
				if !strings.Contains(s.Limits(), "/tmp 96 MiB") {
					t.Fatalf("Limits() = %q; want /tmp bounded like the memory", s.Limits())
				}
				// 40 files of 3 MiB (each under the file size limit) are more
				// than /tmp (or the memory cgroup) holds.
				res, err := s.Run(t.Context(), Args{Command: `i=0; while [ $i -lt 40 ]; do dd if=/dev/zero of=/tmp/f$i bs=1M count=3 2>/dev/null || { echo "full at $i"; break; }; i=$((i+1)); done`})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("exit %d, hit %v, output %q", res.ExitCode, res.LimitHit, res.Output)
				if res.TimedOut || !strings.Contains(res.Output, "full at") && !slices.Contains(res.LimitHit, LimitMemory) {
					t.Fatalf("/tmp was not bounded: %+v", res)
				}
				hostCanFork(t)
			})

			t.Run("busy loop", func(t *testing.T) {
				res, err := s.Run(t.Context(), Args{Command: `while :; do :; done`, TimeoutSeconds: 120})
				if err != nil {
					t.Fatal(err)
				}
				if res.TimedOut || !slices.Contains(res.LimitHit, LimitCPU) {
					t.Fatalf("timed out %v, LimitHit %v, exit %d; want cpu_seconds", res.TimedOut, res.LimitHit, res.ExitCode)
				}
			})

			t.Run("within the limits", func(t *testing.T) {
				res, err := s.Run(t.Context(), Args{Command: `echo fine; ulimit -f`})
				if err != nil || res.ExitCode != 0 || res.LimitHit != nil || res.Limits != s.Limits() {
					t.Fatalf("Run = %+v, %v; want a plain success naming the limits", res, err)
				}
				// ulimit -f is in 512-byte blocks (dash) or KiB (bash).
				if f := strings.Fields(res.Output); len(f) != 2 || (f[1] != "8192" && f[1] != "4096") {
					t.Fatalf("output %q; want the file size limit visible to the command", res.Output)
				}
			})
			if left := leftoverCgroups(t); len(left) > 0 {
				t.Fatalf("cgroups left behind: %v", left)
			}
		})
	}
}

func TestPlanLimits(t *testing.T) {
	all := Limits{Processes: 10, Memory: 1 << 30, FileSize: 256 << 20, CPUSeconds: 60}
	root := os.Getuid() == 0
	tests := []struct {
		name        string
		l           Limits
		launcher    bool
		bwrap       bool
		wantDesc    string
		wantMissing string
	}{
		{name: "nothing configured", launcher: true, bwrap: true, wantDesc: "none"},
		{name: "no launcher", l: all, wantDesc: "none", wantMissing: "no resource limits (they need the sandbox launcher)"},
		{name: "rlimits only", l: Limits{FileSize: 1 << 20, CPUSeconds: 5}, launcher: true, wantDesc: "file size 1 MiB, cpu 5s per process"},
		{name: "memory as rlimit", l: Limits{Memory: 3000}, launcher: true, wantDesc: "memory 3000 bytes per process (rlimit)"},
	}
	if root {
		tests = append(tests, struct {
			name        string
			l           Limits
			launcher    bool
			bwrap       bool
			wantDesc    string
			wantMissing string
		}{name: "root without cgroups", l: all, launcher: true, bwrap: true,
			wantDesc:    "memory 1 GiB per process (rlimit), file size 256 MiB, cpu 60s per process",
			wantMissing: "processes not limited: running as root, where RLIMIT_NPROC does not apply, and no pids cgroup (cgroups disabled)"})
	} else {
		tests = append(tests, struct {
			name        string
			l           Limits
			launcher    bool
			bwrap       bool
			wantDesc    string
			wantMissing string
		}{name: "user without cgroups", l: all, launcher: true, bwrap: true,
			wantDesc: "processes 10 (rlimit), memory 1 GiB per process (rlimit), file size 256 MiB, cpu 60s per process"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planLimits(tc.l, tc.launcher, tc.bwrap, cgroupsOff)
			if p.desc != tc.wantDesc || p.missing != tc.wantMissing {
				t.Fatalf("planLimits = %q, missing %q; want %q, missing %q", p.desc, p.missing, tc.wantDesc, tc.wantMissing)
			}
		})
	}
}

func TestNegativeLimitsRefused(t *testing.T) {
	ws := newShell(t, Config{Mode: ModeOff}).cfg.Workspace
	if _, err := New(t.Context(), Config{Workspace: ws, Mode: ModeOff, Limits: Limits{Memory: -1}}, nil); err == nil {
		t.Fatal("New accepted a negative memory limit")
	}
}

func TestLimitsOffSaysSo(t *testing.T) {
	s := newShell(t, Config{Mode: ModeOff, Limits: DefaultLimits()})
	res, err := s.Run(t.Context(), Args{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Limits != "none" || !strings.Contains(res.Note, "no resource limits") {
		t.Fatalf("Result = %+v; want no limits, said in the note", res)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1 GiB", 256 << 20: "256 MiB", 3 << 10: "3 KiB", 1000: "1000 bytes", 1536 << 20: "1536 MiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q; want %q", n, got, want)
		}
	}
}

// TestOldBubblewrapWithoutSize stands in a bubblewrap that refuses --size
// (before 0.7): the sandbox still works and says /tmp is not bounded.
func TestOldBubblewrapWithoutSize(t *testing.T) {
	real, err := probe(t.Context(), "")
	if err != nil {
		requireLayers(t, err, nil)
		t.Skipf("bubblewrap unavailable: %v", err)
	}
	old := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\nfor a; do [ \"$a\" = --size ] && { echo 'bwrap: Unknown option --size' >&2; exit 1; }; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(old, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newShell(t, Config{Mode: ModeRequired, Bwrap: old, Limits: Limits{Memory: 64 << 20}, noCgroup: true})
	if s.bwrap == "" || strings.Contains(s.Limits(), "/tmp") {
		t.Fatalf("Status %q, limits %q; want bubblewrap used and /tmp not bounded", s.Status(), s.Limits())
	}
	if res, err := s.Run(t.Context(), Args{Command: "echo ok > /tmp/x && cat /tmp/x"}); err != nil || res.Output != "ok\n" || !strings.Contains(res.Note, "/tmp not size-limited") {
		t.Fatalf("Run = %+v, %v; want it to run and say /tmp is not bounded", res, err)
	}
}

func TestUserTasksCountsThisProcess(t *testing.T) {
	if n := userTasks(os.Getuid()); n < 1 {
		t.Fatalf("userTasks = %d; want at least this process's threads", n)
	}
	if n := userTasks(-5); n != 0 {
		t.Fatalf("userTasks(-5) = %d; want 0", n)
	}
}

func TestParseCgroupFiles(t *testing.T) {
	tests := []struct {
		name       string
		mountinfo  string
		self       string
		wantMounts map[string]string
		wantSelf   map[string]string
	}{
		{name: "cgroup v2 under systemd",
			mountinfo:  "24 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n30 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n",
			self:       "0::/system.slice/reverie.service/main\n",
			wantMounts: map[string]string{"": "/sys/fs/cgroup"},
			wantSelf:   map[string]string{"": "/system.slice/reverie.service/main"}},
		{name: "hybrid v1 and v2",
			mountinfo: "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
				"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			self:       "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/4d8b\n1:cpu,cpuacct:/\n0::/\n",
			wantMounts: map[string]string{"": "/sys/fs/cgroup/unified", "memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"},
			wantSelf:   map[string]string{"": "/", "name=systemd": "/", "pids": "/", "memory": "/process_api/4d8b", "cpu": "/", "cpuacct": "/"}},
		{name: "bind-mounted sub-tree is skipped",
			mountinfo:  "50 40 0:22 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n",
			self:       "0::/\n",
			wantMounts: map[string]string{},
			wantSelf:   map[string]string{"": "/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseMountinfo(strings.NewReader(tc.mountinfo))
			if len(tc.wantMounts) == 0 {
				if err == nil {
					t.Fatalf("parseMountinfo = %v; want an error (nothing usable)", m)
				}
			} else if err != nil || !maps.Equal(m, tc.wantMounts) {
				t.Fatalf("parseMountinfo = %v, %v; want %v", m, err, tc.wantMounts)
			}
			if got := parseSelfCgroup(tc.self); !maps.Equal(got, tc.wantSelf) {
				t.Fatalf("parseSelfCgroup = %v; want %v", got, tc.wantSelf)
			}
		})
	}
}

// TestCgroupFailureFallsBack gives the shell a "cgroup" that is a plain
// directory: the command still runs, under resource limits, and this and
// every later result say why cgroups are not used.
func TestCgroupFailureFallsBack(t *testing.T) {
	su := sandboxedSetups(t, false)[0]
	cfg := su.cfg
	cfg.Limits = Limits{Processes: 64, Memory: 256 << 20, FileSize: 1 << 20}
	cfg.noCgroup = true
	for _, tc := range []struct {
		name string
		cg   func(dir string) *cgroups
	}{
		// No cgroup.procs: creating the command's cgroup fails.
		{"v1 hierarchy that is no cgroup", func(dir string) *cgroups {
			return &cgroups{v1: map[string]string{ctrlPids: dir}, limit: cfg.Limits}
		}},
		// Not a cgroup directory: starting the command in it fails.
		{"v2 parent that is no cgroup", func(dir string) *cgroups {
			return &cgroups{v2: dir, v2On: []string{ctrlPids}, v1: map[string]string{}, limit: cfg.Limits}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShell(t, cfg)
			broken := *s.limits.Load()
			broken.cg = tc.cg(t.TempDir())
			broken.desc = "processes 64 (cgroup)"
			s.limits.Store(&broken)
			for i := range 2 {
				res, err := s.Run(t.Context(), Args{Command: "echo ran"})
				if err != nil || res.Output != "ran\n" {
					t.Fatalf("run %d: %+v, %v; want the command run without cgroups", i, res, err)
				}
				if !strings.Contains(res.Note, "cgroups failed") || strings.Contains(res.Limits, "(cgroup)") || su.wantNote != "" && strings.Count(res.Note, su.wantNote) > 1 {
					t.Fatalf("run %d: note %q, limits %q; want the failure said once and no cgroup claimed", i, res.Note, res.Limits)
				}
			}
		})
	}
}

// BenchmarkLimitsOverhead measures what the limits add per command on a
// loaded machine: each iteration runs "true" without limits, with resource
// limits only and with cgroups, back to back, in the setup with every
// layer; the medians are reported.
func BenchmarkLimitsOverhead(b *testing.B) {
	all := sandboxedSetups(b, false)
	su := all[len(all)-1]
	plain := newShell(b, su.cfg)
	rcfg := su.cfg
	rcfg.Limits, rcfg.noCgroup = DefaultLimits(), true
	rl := newShell(b, rcfg)
	ccfg := su.cfg
	ccfg.Limits = DefaultLimits()
	cg := newShell(b, ccfg)
	b.Logf("%s; with cgroups: %s", su.name, cg.Limits())
	var tp, tr, tc []time.Duration
	for b.Loop() {
		for _, x := range []struct {
			s *Shell
			d *[]time.Duration
		}{{plain, &tp}, {rl, &tr}, {cg, &tc}} {
			start := time.Now()
			if _, err := x.s.Run(b.Context(), Args{Command: "true"}); err != nil {
				b.Fatal(err)
			}
			*x.d = append(*x.d, time.Since(start))
		}
	}
	b.ReportMetric(float64(median(tp).Microseconds()), "µs-plain")
	b.ReportMetric(float64(median(tr).Microseconds()), "µs-rlimits")
	b.ReportMetric(float64(median(tc).Microseconds()), "µs-cgroups")
}

// The description before the self-test looks for cgroups without creating
// one; where the self-test's way finds them, it finds the same.
func TestPredictedCgroupsMatchTried(t *testing.T) {
	l := Limits{Processes: 64, Memory: 256 << 20}
	tried := planLimits(l, true, true, cgroupsTried)
	predicted := planLimits(l, true, true, cgroupsPredicted)
	if tried.cg == nil {
		t.Logf("no usable cgroup on this machine (%s); predicted: %q", tried.missing, predicted.desc)
		return
	}
	if predicted.desc != tried.desc || predicted.cg.v2 != tried.cg.v2 || !maps.Equal(predicted.cg.v1, tried.cg.v1) {
		t.Errorf("predicted %q (v2 %q, v1 %v), tried %q (v2 %q, v1 %v)",
			predicted.desc, predicted.cg.v2, predicted.cg.v1, tried.desc, tried.cg.v2, tried.cg.v1)
	}
}

func TestCanWrite(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		dir  string
		ok   bool
	}{
		{"writable directory", dir, true},
		{"missing directory", filepath.Join(dir, "missing"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := canWrite(tc.dir, 2, nil, Limits{})
			if (err == nil) != tc.ok {
				t.Fatalf("canWrite(%s) = %v, want ok %v", tc.dir, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "cgroup v2 "+tc.dir) {
				t.Errorf("error %q does not name the cgroup", err)
			}
		})
	}
}

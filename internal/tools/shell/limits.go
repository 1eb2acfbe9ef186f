package shell

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reverie-ai/reverie/internal/sandbox"
)

// Limits bound what one command may consume; a zero field is unlimited.
// They need the sandbox launcher (every mode but off) and apply to each
// command separately.
type Limits struct {
	// Processes caps the processes and threads of a command: a pids cgroup
	// when one can be created (counts the whole sandbox, root included),
	// else RLIMIT_NPROC (counts the sandbox's processes inside bubblewrap's
	// user namespace, every process of the user without it; the kernel
	// does not apply it to root, so as root without a pids cgroup the
	// processes are not limited, and the results say so).
	Processes int
	// Memory caps the command's memory in bytes: a memory cgroup (the
	// whole sandbox, swap included) when one can be created, else
	// RLIMIT_AS (the address space of each process).
	Memory int64
	// FileSize is the largest file a command may write, in bytes
	// (RLIMIT_FSIZE): the write beyond it fails and the process gets
	// SIGXFSZ. With bubblewrap /tmp is also a tmpfs of this size.
	FileSize int64
	// CPUSeconds is the CPU time of each process (RLIMIT_CPU): SIGXCPU at
	// the limit, SIGKILL a second later. The wall-clock timeout bounds the
	// command as a whole.
	CPUSeconds int
}

// Default limits (config tools.shell.limits).
const (
	DefaultProcesses  = 256
	DefaultMemory     = 1 << 30
	DefaultFileSize   = 256 << 20
	DefaultCPUSeconds = 60
)

// DefaultLimits are the limits a new configuration starts with.
func DefaultLimits() Limits {
	return Limits{Processes: DefaultProcesses, Memory: DefaultMemory, FileSize: DefaultFileSize, CPUSeconds: DefaultCPUSeconds}
}

// Names of the limits in Result.LimitHit.
const (
	LimitProcesses = "processes"
	LimitMemory    = "memory"
	LimitFileSize  = "file_size"
	LimitCPU       = "cpu_seconds"
)

// Cgroup controllers used for the limits.
const (
	ctrlPids   = "pids"
	ctrlMemory = "memory"
)

// cgroups is where commands' cgroups are created: a cgroup v2 directory
// whose subtree has the controllers in v2 enabled (commands are started
// in their cgroup with CLONE_INTO_CGROUP), and cgroup v1 hierarchies, one
// directory per controller (the launcher joins them by writing to their
// cgroup.procs, which it inherits open).
type cgroups struct {
	v2    string
	v2On  []string          // controllers handled by v2
	v1    map[string]string // controller → parent directory
	limit Limits
}

// has reports whether ctrl is limited by a cgroup.
func (c *cgroups) has(ctrl string) bool {
	if c == nil {
		return false
	}
	_, ok := c.v1[ctrl]
	return ok || slices.Contains(c.v2On, ctrl)
}

// cgroupCheck is how planLimits looks for the cgroups to use.
type cgroupCheck int

const (
	// cgroupsTried: a candidate is used once a child of it has been
	// created, limited and removed (the self-test, diagnostics).
	cgroupsTried cgroupCheck = iota
	// cgroupsPredicted: a candidate is taken when this process may write
	// to it, without creating anything (execute_shell's description
	// before the self-test, which then tries them).
	cgroupsPredicted
	// cgroupsOff: cgroups are not used.
	cgroupsOff
)

// canWrite is detectCgroups' check for cgroupsPredicted: whether this
// process may create a child of dir.
func canWrite(dir string, version int, _ []string, _ Limits) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("cgroup v%d %s: %w", version, dir, err)
	}
	return nil
}

// detectCgroups finds where this process may create cgroups limiting the
// controllers the limits need, checking each candidate with try
// (tryCgroup or canWrite). It reports nil (and why) when none passes.
func detectCgroups(l Limits, try func(dir string, version int, ctrls []string, l Limits) error) (*cgroups, string) {
	var want []string
	if l.Processes > 0 {
		want = append(want, ctrlPids)
	}
	if l.Memory > 0 {
		want = append(want, ctrlMemory)
	}
	if len(want) == 0 {
		return nil, "no process or memory limit configured"
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err.Error()
	}
	self, err := selfCgroups()
	if err != nil {
		return nil, err.Error()
	}
	c := &cgroups{v1: map[string]string{}, limit: l}
	var why []string
	if m, ok := mounts[""]; ok {
		if p, ok := self[""]; ok {
			dir := filepath.Join(m, p)
			// Our own cgroup can only have controllers for its children when
			// it is the root; a parent delegated to us (systemd's
			// DelegateSubgroup=) can make us a sibling.
			for _, cand := range []string{dir, filepath.Dir(dir)} {
				if !strings.HasPrefix(cand, m) {
					continue
				}
				on := enabledControllers(cand)
				var use []string
				for _, w := range want {
					if slices.Contains(on, w) {
						use = append(use, w)
					}
				}
				if len(use) == 0 {
					continue
				}
				if err := try(cand, 2, use, l); err != nil {
					why = append(why, err.Error())
					continue
				}
				c.v2, c.v2On = cand, use
				break
			}
			if c.v2 == "" && len(why) == 0 {
				why = append(why, "cgroup v2: no writable cgroup with "+strings.Join(want, " and ")+" enabled for its children (run under systemd with Delegate=pids memory and DelegateSubgroup=)")
			}
		}
	}
	for _, w := range want {
		if slices.Contains(c.v2On, w) {
			continue
		}
		m, ok := mounts[w]
		p, ok2 := self[w]
		if !ok || !ok2 {
			continue
		}
		dir := filepath.Join(m, p)
		if err := try(dir, 1, []string{w}, l); err != nil {
			why = append(why, err.Error())
			continue
		}
		c.v1[w] = dir
	}
	if c.v2 == "" && len(c.v1) == 0 {
		if len(why) == 0 {
			why = append(why, "no cgroup hierarchy with "+strings.Join(want, " or ")+" found")
		}
		return nil, strings.Join(why, "; ")
	}
	return c, ""
}

// cgroupMounts maps each cgroup v1 controller to its hierarchy's mount
// point, and "" to the cgroup v2 mount point.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	return parseMountinfo(f)
}

// parseMountinfo is cgroupMounts on the content of a mountinfo file.
func parseMountinfo(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue // a bind mount of a sub-tree: paths would not match
		}
		switch tail[0] {
		case "cgroup2":
			out[""] = fields[4]
		case "cgroup":
			for _, opt := range strings.Split(tail[2], ",") {
				if opt == ctrlPids || opt == ctrlMemory {
					out[opt] = fields[4]
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup file system mounted")
	}
	return out, nil
}

// selfCgroups maps each controller of /proc/self/cgroup (and "" for v2) to
// this process's cgroup path.
func selfCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	return parseSelfCgroup(string(data)), nil
}

// parseSelfCgroup is selfCgroups on the content of /proc/self/cgroup.
func parseSelfCgroup(data string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

func enabledControllers(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// removeStale removes the command cgroups under dir left by Reverie
// processes that no longer run (killed while a command ran).
func removeStale(dir string, version int) {
	matches, _ := filepath.Glob(filepath.Join(dir, "reverie-shell-*-*"))
	for _, m := range matches {
		pid, err := strconv.Atoi(strings.Split(strings.TrimPrefix(filepath.Base(m), "reverie-shell-"), "-")[0])
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = removeCgroup(m, version)
	}
}

// tryCgroup creates, limits and removes a child of dir.
func tryCgroup(dir string, version int, ctrls []string, l Limits) error {
	removeStale(dir, version)
	child, err := makeCgroup(dir, version, ctrls, l)
	if err != nil {
		return err
	}
	if err := removeCgroup(child, version); err != nil {
		return err
	}
	return nil
}

// makeCgroup creates a uniquely named child of dir with the limits of ctrls.
func makeCgroup(dir string, version int, ctrls []string, l Limits) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	child := filepath.Join(dir, fmt.Sprintf("reverie-shell-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
	if err := os.Mkdir(child, 0o755); err != nil {
		return "", fmt.Errorf("cgroup v%d %s: %w", version, dir, err)
	}
	var files [][2]string
	for _, c := range ctrls {
		switch {
		case c == ctrlPids:
			files = append(files, [2]string{"pids.max", strconv.Itoa(l.Processes)})
		case c == ctrlMemory && version == 2:
			files = append(files, [2]string{"memory.max", strconv.FormatInt(l.Memory, 10)},
				[2]string{"memory.swap.max?", "0"})
		case c == ctrlMemory:
			files = append(files, [2]string{"memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)},
				[2]string{"memory.memsw.limit_in_bytes?", strconv.FormatInt(l.Memory, 10)})
		}
	}
	for _, f := range files {
		name, optional := strings.CutSuffix(f[0], "?")
		err := os.WriteFile(filepath.Join(child, name), []byte(f[1]), 0)
		if err != nil && !(optional && errors.Is(err, os.ErrNotExist)) {
			_ = os.Remove(child)
			return "", fmt.Errorf("cgroup v%d %s: set %s: %w", version, dir, name, err)
		}
	}
	return child, nil
}

// removeCgroup kills whatever still runs in dir and removes it, waiting up
// to a few seconds for the killed processes to be reaped.
func removeCgroup(dir string, version int) error {
	deadline := time.Now().Add(3 * time.Second)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		killCgroup(dir, version)
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(delay)
	}
}

// killCgroup sends SIGKILL to every process in dir: all at once with
// cgroup.kill (cgroup v2, Linux 5.14), else one by one from cgroup.procs.
func killCgroup(dir string, version int) {
	if version == 2 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// cgroupRun is the cgroups of one command.
type cgroupRun struct {
	v2    string            // "" without
	v2fd  *os.File          // the v2 directory, for CLONE_INTO_CGROUP
	v1    map[string]string // controller → directory
	procs []*os.File        // v1 cgroup.procs files, for the launcher
}

// start creates the cgroups of one command.
func (c *cgroups) start() (*cgroupRun, error) {
	r := &cgroupRun{v1: map[string]string{}}
	if c.v2 != "" {
		dir, err := makeCgroup(c.v2, 2, c.v2On, c.limit)
		if err != nil {
			return nil, err
		}
		r.v2 = dir
		if r.v2fd, err = os.Open(dir); err != nil {
			r.close()
			return nil, fmt.Errorf("open cgroup: %w", err)
		}
	}
	for ctrl, parent := range c.v1 {
		dir, err := makeCgroup(parent, 1, []string{ctrl}, c.limit)
		if err != nil {
			r.close()
			return nil, err
		}
		r.v1[ctrl] = dir
		f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("open cgroup: %w", err)
		}
		r.procs = append(r.procs, f)
	}
	return r, nil
}

// hits names the limits the command's cgroups report as reached: the pids
// limit refused a fork, the memory limit killed a process.
func (r *cgroupRun) hits() []string {
	var out []string
	pidsDir, memDir, memV := r.v1[ctrlPids], r.v1[ctrlMemory], 1
	if r.v2 != "" {
		if pidsDir == "" {
			pidsDir = r.v2
		}
		if memDir == "" {
			memDir, memV = r.v2, 2
		}
	}
	if pidsDir != "" && eventCount(filepath.Join(pidsDir, "pids.events"), "max") > 0 {
		out = append(out, LimitProcesses)
	}
	if memDir != "" {
		file := "memory.oom_control"
		if memV == 2 {
			file = "memory.events"
		}
		if eventCount(filepath.Join(memDir, file), "oom_kill") > 0 {
			out = append(out, LimitMemory)
		}
	}
	return out
}

// eventCount reads the counter key of a flat-keyed cgroup file.
func eventCount(file, key string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// close kills what is left in the cgroups and removes them.
func (r *cgroupRun) close() error {
	var errs []error
	for _, f := range r.procs {
		f.Close()
	}
	if r.v2fd != nil {
		r.v2fd.Close()
	}
	if r.v2 != "" {
		errs = append(errs, removeCgroup(r.v2, 2))
	}
	for _, dir := range r.v1 {
		errs = append(errs, removeCgroup(dir, 1))
	}
	return errors.Join(errs...)
}

// limitPlan is how a Shell enforces its Limits.
type limitPlan struct {
	cg      *cgroups
	rlimits sandbox.Limits
	desc    string // the active limits, for results
	missing string // limits configured but not enforced, and why
}

// planLimits decides how l is enforced: cgroups for processes and memory
// when they work, resource limits otherwise.
func planLimits(l Limits, launcher bool, bwrap bool, check cgroupCheck) limitPlan {
	var p limitPlan
	if !launcher {
		if l != (Limits{}) {
			p.missing = "no resource limits (they need the sandbox launcher)"
		}
		p.desc = "none"
		return p
	}
	var cgWhy string
	switch check {
	case cgroupsTried:
		p.cg, cgWhy = detectCgroups(l, tryCgroup)
	case cgroupsPredicted:
		p.cg, cgWhy = detectCgroups(l, canWrite)
	default:
		cgWhy = "cgroups disabled"
	}
	var desc, missing []string
	switch {
	case l.Processes <= 0:
	case p.cg.has(ctrlPids):
		desc = append(desc, fmt.Sprintf("processes %d (cgroup)", l.Processes))
	case os.Getuid() == 0:
		missing = append(missing, "processes not limited: running as root, where RLIMIT_NPROC does not apply, and no pids cgroup ("+cgWhy+")")
	case !bwrap:
		// Without bubblewrap's user namespace RLIMIT_NPROC counts every
		// process of the user: the limit is on top of those running now.
		p.rlimits.Processes = uint64(l.Processes)
		desc = append(desc, fmt.Sprintf("processes %d (rlimit, added to the user's other processes)", l.Processes))
	default:
		p.rlimits.Processes = uint64(l.Processes)
		desc = append(desc, fmt.Sprintf("processes %d (rlimit)", l.Processes))
	}
	switch {
	case l.Memory <= 0:
	case p.cg.has(ctrlMemory):
		desc = append(desc, "memory "+formatBytes(l.Memory)+" (cgroup)")
	default:
		p.rlimits.AddressSpace = uint64(l.Memory)
		desc = append(desc, "memory "+formatBytes(l.Memory)+" per process (rlimit)")
	}
	if l.FileSize > 0 {
		p.rlimits.FileSize = uint64(l.FileSize)
		desc = append(desc, "file size "+formatBytes(l.FileSize))
	}
	if l.CPUSeconds > 0 {
		p.rlimits.CPUSeconds = uint64(l.CPUSeconds)
		desc = append(desc, fmt.Sprintf("cpu %ds per process", l.CPUSeconds))
	}
	p.desc = strings.Join(desc, ", ")
	if p.desc == "" {
		p.desc = "none"
	}
	p.missing = strings.Join(missing, "; ")
	return p
}

// formatBytes renders n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Signals and shell messages of processes stopped by a resource limit.
const (
	exitXFSZ = 128 + int(syscall.SIGXFSZ)
	exitXCPU = 128 + int(syscall.SIGXCPU)
)

// signalHits names the limits a command's exit status or output shows:
// a process killed by SIGXFSZ or SIGXCPU (the shell reports those as
// "File size limit exceeded" and "CPU time limit exceeded").
func signalHits(l Limits, exit int, signaled syscall.Signal, output string) []string {
	var out []string
	if l.FileSize > 0 && (signaled == syscall.SIGXFSZ || exit == exitXFSZ || strings.Contains(output, "File size limit exceeded")) {
		out = append(out, LimitFileSize)
	}
	if l.CPUSeconds > 0 && (signaled == syscall.SIGXCPU || exit == exitXCPU || strings.Contains(output, "CPU time limit exceeded")) {
		out = append(out, LimitCPU)
	}
	return out
}

// kill sends SIGKILL to every process left in the command's cgroups.
func (r *cgroupRun) kill() {
	if r.v2 != "" {
		killCgroup(r.v2, 2)
	}
	for _, dir := range r.v1 {
		killCgroup(dir, 1)
	}
}

// limitName is how a note names a limit of Result.LimitHit.
func limitName(hit string) string {
	switch hit {
	case LimitProcesses:
		return "process"
	case LimitFileSize:
		return "file size"
	case LimitCPU:
		return "CPU time"
	}
	return hit
}

// userTasks counts the tasks (processes and threads) whose real user id
// is uid, as RLIMIT_NPROC does; on error it reports what it counted.
func userTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var realUID, threads int = -1, 1
		for line := range strings.Lines(string(data)) {
			switch {
			case strings.HasPrefix(line, "Uid:"):
				if f := strings.Fields(line); len(f) > 1 {
					realUID, _ = strconv.Atoi(f[1])
				}
			case strings.HasPrefix(line, "Threads:"):
				if f := strings.Fields(line); len(f) > 1 {
					threads, _ = strconv.Atoi(f[1])
				}
			}
		}
		if realUID == uid {
			n += threads
		}
	}
	return n
}

// LimitsStatus says how l would be enforced on this machine, for
// diagnostics: the limits in force and, after "; not enforced: ", what is
// missing. It assumes the sandbox launcher works; bwrap says whether
// bubblewrap does (its user namespace changes what RLIMIT_NPROC counts).
func LimitsStatus(l Limits, bwrap bool) (desc, missing string) {
	p := planLimits(l, true, bwrap, cgroupsTried)
	return p.desc, p.missing
}

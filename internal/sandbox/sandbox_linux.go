//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI is the Landlock ABI version of the running kernel; 0 means Landlock
// is not compiled in or not enabled at boot (err says why).
func ABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("landlock unsupported by this kernel or disabled at boot: %w", err)
	}
	if v < 1 {
		return 0, errors.New("landlock unsupported by this kernel")
	}
	return v, nil
}

// Main is the launcher: it parses args (Spec.Args without the leading
// Subcommand), confines the process and executes the command. It returns
// only on failure, with ExitFailed (or 2 for bad arguments), after writing
// FailurePrefix and the reason to the status descriptor or stderr.
func Main(args []string, stderr io.Writer) int {
	// Package initialisation runs locked to the main thread, but Main may
	// be called elsewhere: no_new_privs is per thread, and the exec must
	// happen on the thread that has it.
	runtime.LockOSThread()
	spec, argv, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s%v\nusage: %s [--rw path]… [--ro path]… [--net] [--no-landlock] [--status-fd n] [--cgroup-fd n]… [--nproc n] [--as bytes] [--fsize bytes] [--cpu seconds] -- command [arg…]\n", FailurePrefix, err, Subcommand)
		return 2
	}
	out := stderr
	if spec.StatusFD > 0 {
		if _, err := unix.FcntlInt(uintptr(spec.StatusFD), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return fail(stderr, fmt.Errorf("status descriptor %d: %w", spec.StatusFD, err))
		}
		out = fdWriter(spec.StatusFD)
	}
	// Join the cgroups first, so that everything below is accounted there.
	for _, fd := range spec.CgroupFDs {
		if err := joinCgroup(fd); err != nil {
			return fail(out, err)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fail(out, fmt.Errorf("find %s: %w", argv[0], err))
	}
	if spec.Landlock {
		if err := restrict(spec); err != nil {
			return fail(out, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(out, fmt.Errorf("set no_new_privs: %w", err))
	}
	if err := dropCapabilities(); err != nil {
		return fail(out, err)
	}
	// The limits come last, immediately before the exec, with everything
	// the exec needs prepared first: under RLIMIT_AS the Go runtime must
	// not map memory any more (its address space may already be above the
	// limit), so nothing between setrlimit and execve allocates.
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return fail(out, fmt.Errorf("exec %s: %w", path, err))
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return fail(out, fmt.Errorf("exec %s: %w", path, err))
	}
	envp, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		return fail(out, fmt.Errorf("exec %s: %w", path, err))
	}
	saved, err := setLimits(spec.Limits)
	if err != nil {
		return fail(out, err)
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	restoreLimits(saved)
	return fail(out, fmt.Errorf("exec %s: %w", path, errno))
}

// dropCapabilities empties the capability bounding, ambient, inheritable,
// permitted and effective sets of this thread (the one that executes the
// command), so that a command started by root (without bubblewrap, or as
// root inside bubblewrap's user namespace) has no capability: it cannot
// raise its resource limits, load kernel modules, open raw sockets or
// signal other users' processes. Without CAP_SETPCAP (an unprivileged
// user) the bounding set cannot change and there is nothing to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 {
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP+23; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// joinCgroup moves this process into the cgroup whose cgroup.procs file is
// open as fd, then closes fd.
func joinCgroup(fd int) error {
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("0")); err != nil {
		return fmt.Errorf("join cgroup (descriptor %d): %w", fd, err)
	}
	return nil
}

// savedLimit is a limit as it was before setLimits.
type savedLimit struct {
	resource int
	lim      unix.Rlimit
}

// restoreLimits lowers nothing and raises the soft limits back where the
// hard ones allow, so that the launcher can report a failed exec.
func restoreLimits(saved []savedLimit) {
	for _, s := range saved {
		var cur unix.Rlimit
		if unix.Getrlimit(s.resource, &cur) == nil {
			cur.Cur = min(s.lim.Cur, cur.Max)
			_ = unix.Setrlimit(s.resource, &cur)
		}
	}
}

// setLimits sets the non-zero limits, soft and hard alike (the CPU hard
// limit one second above, so that SIGXCPU comes first), and returns the
// previous values. It does not allocate after the first setrlimit.
func setLimits(l Limits) ([]savedLimit, error) {
	saved := make([]savedLimit, 0, 4)
	for _, r := range []struct {
		name     string
		resource int
		v        uint64
	}{
		{"RLIMIT_NPROC", unix.RLIMIT_NPROC, l.Processes},
		{"RLIMIT_AS", unix.RLIMIT_AS, l.AddressSpace},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, l.FileSize},
		{"RLIMIT_CPU", unix.RLIMIT_CPU, l.CPUSeconds},
	} {
		if r.v == 0 {
			continue
		}
		lim := unix.Rlimit{Cur: r.v, Max: r.v}
		if r.resource == unix.RLIMIT_CPU {
			lim.Max = r.v + 1
		}
		// Never raise an inherited limit (an unprivileged process could not).
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.resource, &cur); err == nil {
			lim.Cur, lim.Max = min(lim.Cur, cur.Cur), min(lim.Max, cur.Max)
		}
		if err := unix.Setrlimit(r.resource, &lim); err != nil {
			restoreLimits(saved)
			return nil, fmt.Errorf("set %s to %d: %w", r.name, r.v, err)
		}
		saved = append(saved, savedLimit{r.resource, cur})
	}
	return saved, nil
}

// restrict applies the Landlock ruleset for spec to the whole process.
func restrict(spec Spec) error {
	abi, err := ABI()
	if err != nil {
		return err
	}
	cfg := landlock.V11.BestEffort()
	if spec.Network {
		cfg.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.ROFiles(deviceRead...).IgnoreIfMissing(),
		landlock.RWFiles(deviceWrite...).IgnoreIfMissing(),
	}
	for _, p := range etcPaths {
		switch dir, err := isDir(p); {
		case err != nil: // missing on this system
		case dir:
			rules = append(rules, landlock.RODirs(p))
		default:
			rules = append(rules, landlock.ROFiles(p))
		}
	}
	for _, p := range spec.ReadOnly {
		dir, err := isDir(p)
		if err != nil {
			return fmt.Errorf("read-only path: %w", err)
		}
		if dir {
			rules = append(rules, landlock.RODirs(p))
		} else {
			rules = append(rules, landlock.ROFiles(p))
		}
	}
	for _, p := range spec.ReadWrite {
		dir, err := isDir(p)
		if err != nil {
			return fmt.Errorf("writable path: %w", err)
		}
		if !dir {
			rules = append(rules, landlock.RWFiles(p))
			continue
		}
		rule := landlock.RWDirs(p).WithResolveUnix()
		// Refer (rename and link between directories: mv, git) exists from
		// ABI 2; asking for it on ABI 1 would make best effort drop Landlock
		// altogether.
		if abi >= 2 {
			rule = rule.WithRefer()
		}
		rules = append(rules, rule)
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock (ABI %d): %w", abi, err)
	}
	return nil
}

func isDir(p string) (bool, error) {
	info, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return info.IsDir(), nil
}

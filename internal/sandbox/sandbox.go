// Package sandbox is the launcher that confines execute_shell's commands with
// Landlock, the second sandbox layer after bubblewrap.
//
// Go cannot run code between fork and exec, so a child is confined by
// re-executing ourselves: the shell tool starts
//
//	<this executable> __sandbox-exec --rw <workspace> [--ro <dir>]… [--net] -- /bin/sh -c CMD
//
// (inside bubblewrap when it works, directly otherwise). The launcher applies
// a Landlock ruleset to its own process, sets no_new_privs, drops every
// capability (bounding set included: a command started by root has none)
// and replaces itself with the command (execve), which inherits all of it
// and cannot undo it.
//
// # How the subcommand is served
//
// Importing this package makes the binary a launcher: an init function checks
// whether os.Args[1] is Subcommand and, if so, runs Main and never returns to
// the program. Every binary that links execute_shell (reverie itself, and the
// test binary of every package that builds a shell) therefore serves the
// subcommand, so a Shell can always use os.Executable as its launcher without
// running an unrelated program (a test binary would otherwise run its test
// suite again). Serving it at init also skips initialising the rest of the
// program, which keeps the added latency per command low.
//
// # Rules
//
// Readable (and executable): /usr, /bin, /sbin, /lib*, /opt, /proc, the
// parts of /etc listed by EtcPaths (not /etc/shadow, not /etc/ssh),
// /dev/random and /dev/urandom, plus every --ro path. Writable: /dev/null,
// /dev/zero, /dev/full and every --rw path (the workspace and a private
// temporary directory), where renaming and linking between directories is
// allowed too (Landlock ABI 2+). Everything else (the user's home directory,
// the rest of /tmp, /run, /sys, other devices) can be neither read nor
// written. Without --net, TCP bind and connect are refused (ABI 4+), and UDP
// too (ABI 10+). Signals to processes outside the sandbox and connections to
// abstract UNIX sockets outside it are refused (ABI 6+); connecting to
// pathname UNIX sockets outside the --rw paths is refused from ABI 9. Landlock's
// ptrace rule keeps the memory, environment and file descriptors of processes
// outside the sandbox (Reverie's own, with its API keys) out of reach even
// though /proc is readable.
//
// The ruleset uses go-landlock's best-effort mode: on an older kernel it
// enforces what that kernel's Landlock ABI supports. On a kernel without
// Landlock, Main refuses to run the command unless --no-landlock was given
// (the caller decides and reports which layers are active; ABI tells it).
package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Subcommand is the first argument that turns an executable linking this
// package into the launcher.
const Subcommand = "__sandbox-exec"

// ExitFailed is the launcher's exit status when it could not confine or
// start the command. A command may exit 125 too: a caller that must tell
// the two apart passes a status pipe (Spec.StatusFD).
const ExitFailed = 125

// FailurePrefix starts the message the launcher writes when it fails: to
// the status file descriptor when it has one, else to stderr.
const FailurePrefix = "reverie sandbox: "

func init() {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
}

// Spec is what one launched command may do.
type Spec struct {
	// ReadWrite are the directories (or files) the command may read, write,
	// create and delete in: the workspace and a private temporary directory.
	ReadWrite []string
	// ReadOnly are readable paths in addition to the system directories.
	ReadOnly []string
	// Network leaves network access to Landlock unrestricted.
	Network bool
	// Landlock applies the ruleset; false only sets no_new_privs (for
	// kernels without Landlock, which the caller reports).
	Landlock bool
	// StatusFD, when positive, is an inherited file descriptor (the write
	// end of a pipe) that receives the failure message instead of stderr.
	// It is closed by the exec: a reader sees end of file with no data once
	// the command runs confined, so a command cannot pass for the launcher.
	StatusFD int
	// Limits are resource limits (zero fields: not set).
	Limits Limits
	// CgroupFDs are inherited descriptors of cgroup.procs files the
	// launcher joins (by writing "0") before anything else; they are closed
	// by the exec.
	CgroupFDs []int
}

// Limits are the resource limits the launcher sets with setrlimit; a zero
// field is left as inherited.
type Limits struct {
	// Processes is RLIMIT_NPROC: processes (and threads) of the real user
	// id, not enforced for root.
	Processes uint64
	// AddressSpace is RLIMIT_AS in bytes, per process.
	AddressSpace uint64
	// FileSize is RLIMIT_FSIZE in bytes: the largest file a process may
	// write.
	FileSize uint64
	// CPUSeconds is RLIMIT_CPU, per process: SIGXCPU at the limit and
	// SIGKILL one second later.
	CPUSeconds uint64
}

// Args are the arguments after the executable that launch argv under s:
// Subcommand, the options, "--" and argv.
func (s Spec) Args(argv ...string) []string {
	args := make([]string, 0, 4+2*len(s.ReadWrite)+2*len(s.ReadOnly)+len(argv))
	args = append(args, Subcommand)
	for _, p := range s.ReadWrite {
		args = append(args, "--rw", p)
	}
	for _, p := range s.ReadOnly {
		args = append(args, "--ro", p)
	}
	if s.Network {
		args = append(args, "--net")
	}
	if !s.Landlock {
		args = append(args, "--no-landlock")
	}
	if s.StatusFD > 0 {
		args = append(args, "--status-fd", strconv.Itoa(s.StatusFD))
	}
	for _, fd := range s.CgroupFDs {
		args = append(args, "--cgroup-fd", strconv.Itoa(fd))
	}
	for _, l := range []struct {
		flag string
		v    uint64
	}{{"--nproc", s.Limits.Processes}, {"--as", s.Limits.AddressSpace}, {"--fsize", s.Limits.FileSize}, {"--cpu", s.Limits.CPUSeconds}} {
		if l.v > 0 {
			args = append(args, l.flag, strconv.FormatUint(l.v, 10))
		}
	}
	args = append(args, "--")
	return append(args, argv...)
}

func fail(w io.Writer, err error) int {
	fmt.Fprintf(w, "%s%v\n", FailurePrefix, err)
	return ExitFailed
}

// fdWriter writes to a raw file descriptor without taking ownership of it
// (an *os.File would close it when collected).
type fdWriter int

func (fd fdWriter) Write(p []byte) (int, error) { return unix.Write(int(fd), p) }

// pathList is a repeatable flag.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

func (p *pathList) Set(v string) error {
	if !strings.HasPrefix(v, "/") {
		return fmt.Errorf("path %q is not absolute", v)
	}
	*p = append(*p, v)
	return nil
}

func parse(args []string) (Spec, []string, error) {
	fs := flag.NewFlagSet(Subcommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var rw, ro pathList
	fs.Var(&rw, "rw", "writable path (repeatable)")
	fs.Var(&ro, "ro", "extra readable path (repeatable)")
	network := fs.Bool("net", false, "leave the network unrestricted")
	noLandlock := fs.Bool("no-landlock", false, "only set no_new_privs")
	statusFD := fs.Int("status-fd", 0, "descriptor for the failure message")
	var cgroupFDs fdList
	fs.Var(&cgroupFDs, "cgroup-fd", "cgroup.procs descriptor to join (repeatable)")
	var lim Limits
	fs.Uint64Var(&lim.Processes, "nproc", 0, "RLIMIT_NPROC")
	fs.Uint64Var(&lim.AddressSpace, "as", 0, "RLIMIT_AS in bytes")
	fs.Uint64Var(&lim.FileSize, "fsize", 0, "RLIMIT_FSIZE in bytes")
	fs.Uint64Var(&lim.CPUSeconds, "cpu", 0, "RLIMIT_CPU in seconds")
	if err := fs.Parse(args); err != nil {
		return Spec{}, nil, err
	}
	// flag stops at "--" and drops it; insist on it so that a command
	// starting with "-" is never read as an option.
	if n := len(args) - fs.NArg(); n == 0 || args[n-1] != "--" {
		return Spec{}, nil, errors.New(`"--" must separate the options from the command`)
	}
	if fs.NArg() == 0 {
		return Spec{}, nil, errors.New("no command")
	}
	if *statusFD < 0 || *statusFD == 1 || *statusFD == 2 {
		return Spec{}, nil, fmt.Errorf("status descriptor %d: want 3 or more", *statusFD)
	}
	return Spec{ReadWrite: rw, ReadOnly: ro, Network: *network, Landlock: !*noLandlock, StatusFD: *statusFD,
		Limits: lim, CgroupFDs: cgroupFDs}, fs.Args(), nil
}

// fdList is a repeatable descriptor flag (3 or more).
type fdList []int

func (f *fdList) String() string { return fmt.Sprint(*f) }

func (f *fdList) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 3 {
		return fmt.Errorf("descriptor %q: want 3 or more", v)
	}
	*f = append(*f, n)
	return nil
}

// System paths readable by every command; missing ones are skipped.
var (
	systemDirs  = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc"}
	deviceRead  = []string{"/dev/random", "/dev/urandom"}
	deviceWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}
	etcPaths    = []string{
		"/etc/passwd", "/etc/group", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf",
		"/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
		"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives",
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/localtime", "/etc/timezone", "/etc/mime.types", "/etc/os-release",
		"/etc/gitconfig", "/etc/inputrc", "/etc/profile",
	}
)

// EtcPaths are the parts of /etc a command may read: users, name
// resolution, TLS roots, the dynamic loader, time zone and Debian's
// alternatives (many commands are symbolic links through it). Secrets such
// as /etc/shadow or /etc/ssh are not among them. The slice is a copy.
func EtcPaths() []string { return append([]string(nil), etcPaths...) }

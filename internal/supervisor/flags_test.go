package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFlagsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    Flags
	}{
		{name: "minimal", f: Flags{Options: Options{Command: []string{"/bin/reverie"}}}},
		{name: "everything", f: Flags{
			Options: Options{
				Command:           []string{"/opt/my apps/reverie", "agent", "--data", "/home/a b/data", "--config", "/etc/reverie/config.yaml"},
				Dir:               "/home/a b/data",
				RestartFile:       "/home/a b/data/restart-request",
				HealthURL:         "http://127.0.0.1:8080/healthz",
				Instance:          true,
				HealthInterval:    1500 * time.Millisecond,
				HealthFailures:    4,
				HealthStartPeriod: 90 * time.Second,
				BackoffMin:        10 * time.Millisecond,
				BackoffMax:        time.Hour + 2*time.Minute + 3*time.Nanosecond,
				StableAfter:       2 * time.Minute,
				CrashLoopLimit:    7,
				CrashLoopWindow:   5 * time.Minute,
				ShutdownGrace:     250 * time.Microsecond,
			},
			LogLevel:  "debug",
			LogFormat: "json",
			SecretsFD: 5,
		}},
		{name: "never give up", f: Flags{Options: Options{Command: []string{"reverie", "agent"}, CrashLoopLimit: -1}}},
		{name: "agent argv like flags", f: Flags{Options: Options{
			Command: []string{"reverie", "--", "-protocol=9", "-dir=x", "", "a=b"},
		}}},
		{name: "values with equals signs and spaces", f: Flags{
			Options:  Options{Command: []string{"r"}, HealthURL: "http://[::1]:80/healthz?a=b c"},
			LogLevel: "info+2",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.f.Args()
			if !strings.HasPrefix(args[0], protocolFlag) {
				t.Fatalf("Args()[0] = %q, want the protocol first", args[0])
			}
			got, err := ParseArgs(args, nil)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", args, err)
			}
			if !reflect.DeepEqual(got, tc.f) {
				t.Fatalf("round trip of %q:\n got %+v\nwant %+v", args, got, tc.f)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	valid := Flags{Options: Options{Command: []string{"reverie", "agent"}}}.Args()
	tests := []struct {
		name     string
		args     []string
		protocol bool   // the error is a *ProtocolError
		says     string // in the error
	}{
		{name: "empty", args: nil, says: "-protocol=N"},
		{name: "protocol not first", args: append([]string{"-dir=x"}, valid...), says: "-protocol=N"},
		{name: "protocol not a number", args: []string{"-protocol=one"}, says: "-protocol=one"},
		{name: "older protocol", args: []string{fmt.Sprintf("-protocol=%d", Protocol-1), "-whatever-it-had"}, protocol: true,
			says: fmt.Sprintf("reverie-supervisor speaks protocol %d, reverie asked for %d: install both from the same build", Protocol, Protocol-1)},
		{name: "newer protocol with unknown flags", args: []string{fmt.Sprintf("-protocol=%d", Protocol+1), "-new-flag=1", "--", "x"}, protocol: true,
			says: fmt.Sprintf("reverie asked for %d", Protocol+1)},
		{name: "unknown flag", args: append(valid[:1:1], "-no-such-flag=1", "--", "x"), says: "no-such-flag"},
		{name: "bad duration", args: append(valid[:1:1], "-backoff-min=soon", "--", "x"), says: "backoff-min"},
		{name: "no command", args: append(valid[:1:1], "-dir=x", "--"), says: "no agent command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseArgs(tc.args, nil)
			if err == nil {
				t.Fatalf("ParseArgs(%q) succeeded", tc.args)
			}
			var pe *ProtocolError
			if errors.As(err, &pe) != tc.protocol {
				t.Errorf("ParseArgs(%q) = %v; protocol error: %v, want %v", tc.args, err, !tc.protocol, tc.protocol)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ParseArgs(%q) = %q, want it to say %q", tc.args, err, tc.says)
			}
		})
	}
}

func TestSecretsRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		want    []string
	}{
		{name: "none", secrets: nil, want: []string{}},
		{name: "several", secrets: []string{"sk-123", "with\nnewline", `quote " and \ backslash`, "ünïcode"},
			want: []string{"sk-123", "with\nnewline", `quote " and \ backslash`, "ünïcode"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSecrets(&buf, tc.secrets); err != nil {
				t.Fatal(err)
			}
			got, err := ReadSecrets(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ReadSecrets = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ReadSecrets(strings.NewReader("")); err == nil {
		t.Error("ReadSecrets of nothing succeeded")
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "nil", err: nil, want: 0},
		{name: "config", err: fmt.Errorf("agent exited 2: %w", ErrConfigInvalid), want: ExitConfigError},
		{name: "locked", err: fmt.Errorf("x: %w", ErrLocked), want: ExitLocked},
		{name: "data dir", err: fmt.Errorf("x: %w", ErrDataDir), want: ExitDataDir},
		{name: "environment", err: fmt.Errorf("x: %w", ErrEnvironment), want: ExitEnvironment},
		{name: "crash loop", err: fmt.Errorf("x: %w", ErrCrashLoop), want: 1},
		{name: "killed", err: ErrKilled, want: 1},
		{name: "other", err: errors.New("start agent: no such file"), want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

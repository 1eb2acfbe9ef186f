package config

import (
	"strings"
	"testing"
)

func TestShellLimits(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     []string
		want    ShellLimitsConfig
		wantErr string
	}{
		{name: "defaults", want: ShellLimitsConfig{Processes: 256, Memory: 1 << 30, FileSize: 256 << 20, CPUSeconds: 60}},
		{name: "units and zero",
			yaml: "tools:\n  shell:\n    limits:\n      processes: 0\n      memory: 512MiB\n      file_size: 1048576\n      cpu_seconds: 5\n",
			want: ShellLimitsConfig{Memory: 512 << 20, FileSize: 1 << 20, CPUSeconds: 5}},
		{name: "environment", env: []string{"REVERIE_TOOLS__SHELL__LIMITS__MEMORY=2G", "REVERIE_TOOLS__SHELL__LIMITS__PROCESSES=64"},
			want: ShellLimitsConfig{Processes: 64, Memory: 2 << 30, FileSize: 256 << 20, CPUSeconds: 60}},
		{name: "bad unit", yaml: "tools:\n  shell:\n    limits:\n      memory: 1 parsec\n", wantErr: "tools.shell.limits.memory"},
		{name: "negative size", yaml: "tools:\n  shell:\n    limits:\n      file_size: -1\n", wantErr: "tools.shell.limits.file_size"},
		{name: "too large", yaml: "tools:\n  shell:\n    limits:\n      memory: 9999999999TiB\n", wantErr: "too large"},
		{name: "negative processes", yaml: "tools:\n  shell:\n    limits:\n      processes: -3\n", wantErr: "tools.shell.limits.processes"},
		{name: "unknown key", yaml: "tools:\n  shell:\n    limits:\n      threads: 3\n", wantErr: "threads"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml+"\n")
			c, err := Load(path, tc.env, nil)
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load error = %v; want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Tools.Shell.Limits != tc.want {
				t.Fatalf("limits = %+v; want %+v", c.Tools.Shell.Limits, tc.want)
			}
		})
	}
}

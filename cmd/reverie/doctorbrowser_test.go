package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctor names the Chromium the browser tools would run, says when there
// is none, and fails on a configured path that does not exist.
func TestDoctorBrowser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	home := "HOME=" + t.TempDir()
	if code, out, errs := runCLI(t, []string{home}, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	fake := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"found by path setting", []string{"REVERIE_TOOLS__BROWSER__PATH=" + fake}, "browser tools use " + fake},
		{"missing path setting", []string{"REVERIE_TOOLS__BROWSER__PATH=/nonexistent/chromium"}, "tools.browser.path"},
		{"none in PATH", nil, "browser tools absent"},
		{"disabled", []string{"REVERIE_TOOLS__BROWSER__ENABLED=false"}, "browser tools off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == nil {
				t.Setenv("PATH", t.TempDir()) // exec.LookPath reads the process's PATH
			}
			_, out, _ := runCLI(t, append([]string{home}, tc.env...), "doctor", "--data", dir)
			if !strings.Contains(out, tc.want) {
				t.Errorf("doctor output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

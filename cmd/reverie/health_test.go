package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthAsksTheConfiguredAddress: without --url, `reverie health` asks
// the address the data dir's configuration (or the environment) makes the
// web channel listen on, not always 127.0.0.1:8420; where no address can
// be known it says so and names --url. It creates no data dir.
func TestHealthAsksTheConfiguredAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("inst-42\n"))
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(addr, ":")

	for _, tc := range []struct {
		name   string
		config string   // config.yaml in the data dir ("" for none)
		env    []string // besides HOME
		args   []string // besides health --data DIR
		code   int
		out    string
		says   []string
	}{
		{name: "web.listen in the config", config: "web:\n  listen: " + addr + "\n", code: ExitOK, out: "inst-42\n"},
		{name: "every address, asked on loopback", config: "web:\n  listen: 0.0.0.0:" + port + "\n", code: ExitOK, out: "inst-42\n"},
		{name: "the environment's override", env: []string{"REVERIE_WEB__LISTEN=" + addr}, code: ExitOK, out: "inst-42\n"},
		{name: "--url wins", config: "web:\n  listen: 127.0.0.1:1\n", args: []string{"--url", srv.URL + "/healthz"}, code: ExitOK, out: "inst-42\n"},
		{name: "port picked at start", config: "web:\n  listen: 127.0.0.1:0\n", code: ExitFailure,
			says: []string{`web.listen "127.0.0.1:0" picks its port at start`, "--url"}},
		{name: "web channel off", config: "web:\n  enabled: false\n", code: ExitFailure,
			says: []string{"the web channel is off", "--url"}},
		{name: "nothing listens", config: "web:\n  listen: 127.0.0.1:1\n", code: ExitFailure,
			says: []string{"reverie: not healthy: http://127.0.0.1:1/healthz does not answer: nothing listens there (the connection was refused)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tc.config != "" {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := append([]string{"HOME=" + t.TempDir()}, tc.env...)
			code, out, errs := runCLI(t, env, append([]string{"health", "--data", dir}, tc.args...)...)
			if code != tc.code || out != tc.out {
				t.Errorf("exit %d, stdout %q (stderr %q); want %d, %q", code, out, errs, tc.code, tc.out)
			}
			for _, s := range tc.says {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr %q does not say %q", errs, s)
				}
			}
			if tc.config == "" {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("health made the data dir: %v", err)
				}
			}
		})
	}
}

package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

// /healthz echoes the agent's instance id so that the supervisor knows its
// probe reached its own child; without one the body is the plain contract.
func TestHealthzEchoesInstance(t *testing.T) {
	tests := []struct {
		name, instance, want string
	}{
		{"supervised", "4f1c0ffee", `{"status":"ok","instance":"4f1c0ffee"}`},
		{"unsupervised", "", `{"status":"ok"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startWeb(t, "", &api.Services{Instance: tt.instance})
			code, _, body := s.do(t, "GET", "/healthz", "", "")
			if code != http.StatusOK || strings.TrimSpace(body) != tt.want {
				t.Fatalf("/healthz = %d %s, want 200 %s", code, body, tt.want)
			}
		})
	}
}

// A port held by another program fails Start with a message that says so
// and how to fix it.
func TestListenAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	host := extensiontest.NewHost(t, extensiontest.WithConfig("listen: "+ln.Addr().String()+"\ntoken: "+testToken))
	w := new(Web)
	if err := w.Init(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	err = w.Start(context.Background())
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "another program") ||
		!strings.Contains(err.Error(), "REVERIE_WEB__LISTEN") {
		t.Fatalf("Start on a busy port: %v", err)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// CheckConfig rejects what Init rejects, and writes nothing (no token file).
func TestCheckConfig(t *testing.T) {
	tests := []struct {
		name, config string
		wantErr      string // "" for valid
	}{
		{"defaults", "", ""},
		{"valid", "listen: 127.0.0.1:9000\nauth: token", ""},
		{"listen without a port", "listen: localhost", "missing port"},
		{"auth none on a public address", "listen: 0.0.0.0:8420\nauth: none", "loopback"},
		{"unknown key", "listn: 127.0.0.1:1", "listn"},
		{"wrong type", "max_body_bytes: lots", "max_body_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			host := extensiontest.NewHost(t, extensiontest.WithConfig(tt.config), extensiontest.WithDataDir(dir))
			err := new(Web).CheckConfig(host.DecodeConfig)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("CheckConfig: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("CheckConfig = %v, want an error naming %q", err, tt.wantErr)
			}
			// The same verdict as Init.
			initErr := new(Web).Init(context.Background(), extensiontest.NewHost(t, extensiontest.WithConfig(tt.config)))
			if (initErr == nil) != (err == nil) {
				t.Errorf("CheckConfig says %v, Init says %v", err, initErr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("CheckConfig wrote %d files into the data dir", len(entries))
			}
		})
	}
}

// failingThreads answers every call with its error.
type failingThreads struct{ err error }

func (f failingThreads) List(context.Context, api.ThreadQuery) ([]api.Thread, error) {
	return nil, f.err
}

func (f failingThreads) Messages(context.Context, chat.ThreadID, api.MessageQuery) ([]api.Message, error) {
	return nil, f.err
}

// sqliteFull has the Code method of modernc.org/sqlite's errors.
type sqliteFull struct{}

func (sqliteFull) Error() string { return "database or disk is full (13)" }
func (sqliteFull) Code() int     { return 13 }

// A full disk is one clear 507 whatever the error is wrapped in; it never
// passes for a bad request or an anonymous 500. (internal/apptest fills a
// real disk under the whole agent.)
func TestDiskFullAnswers507(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "/data/skills/x.md", Err: syscall.ENOSPC}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"ENOSPC inside an invalid-request error", fmt.Errorf("%w: save: %w", api.ErrInvalid, enospc), http.StatusInsufficientStorage},
		{"SQLITE_FULL", fmt.Errorf("list threads: %w", sqliteFull{}), http.StatusInsufficientStorage},
		{"sentinel", api.ErrDiskFull, http.StatusInsufficientStorage},
		{"other failure", errors.New("boom"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startWeb(t, "", &api.Services{Threads: failingThreads{tt.err}})
			code, _, body := s.do(t, "GET", "/api/v1/threads", "", "Bearer "+testToken)
			if code != tt.want {
				t.Fatalf("status %d %s, want %d", code, body, tt.want)
			}
			var e api.ErrorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			if tt.want == http.StatusInsufficientStorage && e.Error != diskFullMessage {
				t.Errorf("body %q, want %q", e.Error, diskFullMessage)
			}
		})
	}
}

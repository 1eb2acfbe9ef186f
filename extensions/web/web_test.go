package web

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

func TestConformance(t *testing.T) {
	info, ok := extension.Lookup("web")
	if !ok {
		t.Fatal("web not registered")
	}
	extensiontest.Run(t, info, extensiontest.WithConfig("listen: 127.0.0.1:0"))
}

func TestHealthzOnlyWhenReady(t *testing.T) {
	host := extensiontest.NewHost(t, extensiontest.WithConfig("listen: 127.0.0.1:0"))
	w := new(Web)
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Init(ctx, host); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	base := "http://" + w.Addr().String()

	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Status string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body.Status
	}
	if code, status := get(); code != http.StatusServiceUnavailable || status != "starting" {
		t.Fatalf("before ready: %d %q, want 503 starting", code, status)
	}
	w.OnReady(ctx)
	if code, status := get(); code != http.StatusOK || status != "ok" {
		t.Fatalf("after ready: %d %q, want 200 ok", code, status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestBadListenAddress(t *testing.T) {
	host := extensiontest.NewHost(t, extensiontest.WithConfig("listen: not-an-address"))
	if err := new(Web).Init(context.Background(), host); err == nil {
		t.Fatal("Init accepted a listen address without a port")
	}
}

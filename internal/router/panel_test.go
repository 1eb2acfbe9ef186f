package router

import (
	"context"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
)

func TestDebugAsksForThePanelURL(t *testing.T) {
	url := ""
	h := newHarness(t, echo("reply"), nil, func(o *Options) {
		o.DebugURL = "http://static.example/"
		o.PanelURL = func() string { return url }
	})
	h.markKnown("web:d")
	h.run()
	tests := []struct {
		name string
		url  string
		want string
	}{
		{"web not running", "", "not available"},
		{"bound listener", "http://127.0.0.1:41234/#debug", "http://127.0.0.1:41234/#debug"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url = tc.url
			res, err := h.router.Handle(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:d"}, Text: "/debug"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Reply, tc.want) || strings.Contains(res.Reply, "static.example") {
				t.Errorf("/debug = %q, want it to name %q", res.Reply, tc.want)
			}
		})
	}
}

package kernel

import (
	"context"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
)

// hostGrabber keeps the host it was initialised with.
type hostGrabber struct{ host extension.Host }

func (g *hostGrabber) Init(_ context.Context, h extension.Host) error { g.host = h; return nil }

func TestAPIServicesReachExtensions(t *testing.T) {
	tests := []struct {
		name string
		svc  *api.Services
	}{
		{"offered", &api.Services{}},
		{"none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &hostGrabber{}
			k := mustNew(t, Options{APIServices: tc.svc, Registry: []extension.Info{
				{ID: "grab", New: func() extension.Extension { return g }},
			}})
			if err := k.Init(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := api.ServicesFrom(g.host)
			if got == nil {
				t.Fatal("ServicesFrom returned nil")
			}
			if tc.svc != nil && got != tc.svc {
				t.Fatalf("ServicesFrom returned %p, want the kernel's %p", got, tc.svc)
			}
			if tc.svc == nil && (got.Chat != nil || got.Threads != nil) {
				t.Fatalf("ServicesFrom without services returned %+v", got)
			}
		})
	}
}

package kernel

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// host is the extension.Host of one extension.
type host struct {
	k   *Kernel
	id  string
	log *slog.Logger
	bus extension.Bus
}

func newHost(k *Kernel, id string) *host {
	var bus extension.Bus = noBus{}
	if k.opts.Bus != nil {
		bus = scopedBus{id: id, bus: k.opts.Bus}
	}
	return &host{k: k, id: id, log: k.opts.Logger.With("ext", id), bus: bus}
}

func (h *host) ID() string           { return h.id }
func (h *host) Logger() *slog.Logger { return h.log }
func (h *host) DataDir() string      { return h.k.opts.DataDir }
func (h *host) DB() *sql.DB          { return h.k.opts.DB }
func (h *host) Bus() extension.Bus   { return h.bus }

// Migrate migrates through Options.Migrations (on its own when nil).
func (h *host) Migrate(ctx context.Context, component string, files fs.FS, dir string) error {
	return h.k.opts.Migrations.Migrate(ctx, h.k.opts.DB, component, files, dir)
}
func (h *host) Now() time.Time { return h.k.opts.Now() }

// Console is Options.Console (io.Discard when unset): output for the
// person at the terminal that never goes to the log file.
func (h *host) Console() io.Writer {
	if h.k.opts.Console == nil {
		return io.Discard
	}
	return h.k.opts.Console
}

// RegisterSecret adds value to Options.Secrets (redact.Secrets.Add).
func (h *host) RegisterSecret(value string) { h.k.opts.Secrets.Add(value) }

// Redact removes Options.Secrets from text.
func (h *host) Redact(text string) string { return h.k.opts.Secrets.Redact(text) }

// DecodeConfig decodes this extension's configuration section; with no
// configuration v is left unchanged.
func (h *host) DecodeConfig(v any) error {
	if h.k.opts.Config == nil {
		return nil
	}
	if err := h.k.opts.Config.DecodeExtension(h.id, v); err != nil {
		return fmt.Errorf("decode configuration of extension %q: %w", h.id, err)
	}
	return nil
}

// APIServices returns the services of Options.APIServices (api.Provider).
func (h *host) APIServices() *api.Services { return h.k.opts.APIServices }

// Receive hands msg to the router, or fails with ErrNoRouter.
func (h *host) Receive(ctx context.Context, msg chat.Inbound) error {
	if h.k.opts.Receive == nil {
		return ErrNoRouter
	}
	return h.k.opts.Receive(ctx, msg)
}

// WasReceived reports whether Receive would drop msg as a message accepted
// before (its channel and ID); false without Options.WasReceived. Channels
// find it by a type assertion on their Host: a message fetched again is
// not downloaded again.
func (h *host) WasReceived(ctx context.Context, msg chat.Inbound) (bool, error) {
	if h.k.opts.WasReceived == nil {
		return false, nil
	}
	return h.k.opts.WasReceived(ctx, msg)
}

// scopedBus namespaces subscriber names by extension id so that two
// extensions can both name a subscriber "indexer".
type scopedBus struct {
	id  string
	bus extension.Bus
}

func (b scopedBus) Publish(ctx context.Context, topic string, payload any) error {
	return b.bus.Publish(ctx, topic, payload)
}

func (b scopedBus) Subscribe(name, prefix string, h extension.Handler) error {
	return b.bus.Subscribe(b.id+"/"+name, prefix, h)
}

// noBus is the Bus of a kernel built without one.
type noBus struct{}

func (noBus) Publish(context.Context, string, any) error { return ErrNoBus }

func (noBus) Subscribe(string, string, extension.Handler) error { return ErrNoBus }

var (
	_ extension.Host = (*host)(nil)
	_ api.Provider   = (*host)(nil)
	_ extension.Bus  = scopedBus{}
	_ extension.Bus  = noBus{}
)

package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/router"
)

// ownerChannels are the channels only the owner can reach (the web page
// needs the access token, the terminal runs on the owner's machine). A
// channel with pairing (Telegram) is one too: only people the owner let in
// reach the router from it.
var ownerChannels = map[string]bool{"web": true, "cli": true}

// pairers are the running channels with pairing codes.
func (a *App) pairers() []extension.Pairer {
	var out []extension.Pairer
	for _, ch := range a.Kernel.Channels() {
		if p, ok := ch.(extension.Pairer); ok {
			out = append(out, p)
		}
	}
	return out
}

// registerApprove adds /approve CODE when a channel with pairing runs.
func (a *App) registerApprove() error {
	if len(a.pairers()) == 0 {
		return nil
	}
	return a.Router.Register(router.Command{
		Name: "approve",
		Help: "let in the person who got a pairing code (/approve CODE)",
		Run: func(ctx context.Context, cc router.CommandContext) (string, error) {
			// Refusals are answers: what was wrong, nobody let in.
			if !ownerChannels[cc.Channel] {
				p, ok := a.pairer(cc.Channel)
				if !ok {
					return "Pairing codes can only be approved from your own channels (web, terminal, Telegram).", nil
				}
				// People let in by pairing do not let in others.
				if !p.IsOwner(cc.Sender.ID) {
					return fmt.Sprintf("Only the owner can approve pairing codes (on %s: the users of its allowed_users), not people let in by pairing.", cc.Channel), nil
				}
			}
			code := strings.TrimSpace(cc.Args)
			if code == "" {
				return "Usage: /approve CODE — the pairing code the person received.", nil
			}
			p, err := a.approvePairing(ctx, "", code)
			if errors.Is(err, extension.ErrPairingCode) {
				return fmt.Sprintf("Nobody was let in: %s.", api.Reason(err)), nil
			}
			if err != nil {
				return "", err
			}
			name := p.Name
			if name == "" {
				name = "user " + p.UserID
			}
			return fmt.Sprintf("Approved: %s can now talk to the assistant on %s.", name, p.Channel), nil
		},
	})
}

// pairer is the running channel with pairing codes called channel.
func (a *App) pairer(channel string) (extension.Pairer, bool) {
	for _, p := range a.pairers() {
		if p.ChannelName() == channel {
			return p, true
		}
	}
	return nil, false
}

// approvePairing approves code on channel ("" tries every channel with
// pairing).
func (a *App) approvePairing(ctx context.Context, channel, code string) (extension.Paired, error) {
	ps := a.pairers()
	if channel != "" {
		ps = nil
		for _, p := range a.pairers() {
			if p.ChannelName() == channel {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			return extension.Paired{}, fmt.Errorf("%w: the %s channel is not running", api.ErrNotFound, channel)
		}
	}
	if len(ps) == 0 {
		return extension.Paired{}, fmt.Errorf("%w: no channel with pairing codes is running", api.ErrNotFound)
	}
	var err error
	for _, p := range ps {
		var paired extension.Paired
		paired, err = p.ApprovePairing(ctx, code)
		if err == nil {
			return paired, nil
		}
		if !errors.Is(err, extension.ErrPairingCode) {
			return extension.Paired{}, err
		}
	}
	return extension.Paired{}, fmt.Errorf("%w: %w; %s", api.ErrNotFound, err, newCodeHint)
}

// newCodeHint follows a refused pairing code, for whoever approves.
const newCodeHint = "the person gets a new code by writing to the bot again"

// apiPairing approves pairing codes for the HTTP API.
type apiPairing struct{ a *App }

func (p apiPairing) Approve(ctx context.Context, channel, code string) (api.PairingApproval, error) {
	if strings.TrimSpace(code) == "" {
		return api.PairingApproval{}, fmt.Errorf("%w: code is empty", api.ErrInvalid)
	}
	paired, err := p.a.approvePairing(ctx, channel, code)
	if err != nil {
		return api.PairingApproval{}, err
	}
	return api.PairingApproval{Channel: paired.Channel, UserID: paired.UserID, Name: paired.Name}, nil
}

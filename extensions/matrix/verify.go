package matrix

import (
	"context"
	"fmt"
	"strings"

	"maunium.net/go/mautrix/crypto/verificationhelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// verifier answers interactive (SAS emoji) verification requests from
// allowed users and refuses everyone else's. The helper calls it from the
// sync goroutine while holding its own lock, so the answers are queued and
// run by the sync loop after the batch (runVerifications).
type verifier struct {
	m    *Matrix
	vh   *verificationhelper.VerificationHelper
	todo []func(ctx context.Context) error
	who  map[id.VerificationTransactionID]id.UserID // the requester of each transaction
}

// setupVerification creates the helper and registers its sync handlers;
// it runs before the first sync.
func (m *Matrix) setupVerification(ctx context.Context) error {
	v := &verifier{m: m, who: map[id.VerificationTransactionID]id.UserID{}}
	v.vh = verificationhelper.NewVerificationHelper(m.cli, m.mach, nil, v, false, false, true)
	if err := v.vh.Init(ctx); err != nil {
		return fmt.Errorf("matrix verification: %w", err)
	}
	m.verify = v
	return nil
}

// runVerifications runs the queued answers (on the sync goroutine).
func (m *Matrix) runVerifications(ctx context.Context) {
	if m.verify == nil {
		return
	}
	todo := m.verify.todo
	m.verify.todo = nil
	for _, f := range todo {
		if err := f(ctx); err != nil {
			m.log.Warn("matrix verification step failed", "err", m.scrub(err))
		}
	}
}

func (v *verifier) VerificationRequested(_ context.Context, txn id.VerificationTransactionID, from id.UserID, device id.DeviceID) {
	if !v.m.allowed[from] {
		v.m.logStranger(from, "verification request refused")
		v.todo = append(v.todo, func(ctx context.Context) error {
			return v.vh.CancelVerification(ctx, txn, event.VerificationCancelCodeUser, "not an allowed user")
		})
		return
	}
	v.who[txn] = from
	v.m.log.Info("matrix verification requested; accepting", "user", from, "device", device)
	v.todo = append(v.todo, func(ctx context.Context) error { return v.vh.AcceptVerification(ctx, txn) })
}

func (v *verifier) VerificationReady(context.Context, id.VerificationTransactionID, id.DeviceID, bool, bool, *verificationhelper.QRCode) {
	// The other side starts the emoji comparison.
}

func (v *verifier) VerificationCancelled(_ context.Context, txn id.VerificationTransactionID, code event.VerificationCancelCode, reason string) {
	delete(v.who, txn)
	v.m.log.Info("matrix verification cancelled", "code", code, "reason", reason)
}

func (v *verifier) VerificationDone(_ context.Context, txn id.VerificationTransactionID, method event.VerificationMethod) {
	v.m.log.Info("matrix verification done", "user", v.who[txn], "method", method)
	delete(v.who, txn)
}

// ShowSAS posts the emojis in the direct chat with the other user, so they
// can compare them with their client's, and confirms on the bot's side:
// the verification completes only when the user confirms too.
func (v *verifier) ShowSAS(ctx context.Context, txn id.VerificationTransactionID, emojis []rune, descs []string, decimals []int) {
	parts := make([]string, len(emojis))
	for i, e := range emojis {
		parts[i] = string(e)
		if i < len(descs) {
			parts[i] += " " + descs[i]
		}
	}
	text := "Verification: my emojis are " + strings.Join(parts, ", ") +
		". Confirm in your client only if it shows the same ones."
	v.todo = append(v.todo, func(ctx context.Context) error {
		if room := v.m.directRoomWith(ctx, v.who[txn]); room != "" {
			v.m.notice(ctx, room, text)
		} else {
			v.m.log.Info("matrix verification emojis (no direct chat to show them in)", "emojis", strings.Join(parts, ", "))
		}
		return v.vh.ConfirmSAS(ctx, txn)
	})
}

// directRoomWith returns a room the bot shares with user alone ("" when
// none).
func (m *Matrix) directRoomWith(ctx context.Context, user id.UserID) id.RoomID {
	if user == "" {
		return ""
	}
	rooms, err := m.stateStore.FindSharedRooms(ctx, user)
	if err != nil {
		return ""
	}
	for _, r := range rooms {
		if !m.isGroup(ctx, r) {
			return r
		}
	}
	return ""
}

var (
	_ verificationhelper.RequiredCallbacks = (*verifier)(nil)
	_ verificationhelper.ShowSASCallbacks  = (*verifier)(nil)
)

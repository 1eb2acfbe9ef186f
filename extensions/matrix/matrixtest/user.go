package matrixtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/verificationhelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"

	_ "modernc.org/sqlite" // the crypto and state stores of the test users
)

// WaitTimeout bounds every wait of a test user.
const WaitTimeout = 90 * time.Second

// User is a person on the homeserver: a logged-in mautrix client with its
// own device and end-to-end encryption, syncing in the background and
// recording what it sees.
type User struct {
	ID     id.UserID
	Client *mautrix.Client

	mach   *crypto.OlmMachine
	state  *sqlstatestore.SQLStateStore
	syncer *mautrix.DefaultSyncer
	db     *sql.DB

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when events arrive
	events  []*event.Event
	pending []*event.Event // encrypted events without their key yet

	verifier *Verifier

	cancel context.CancelFunc
	done   chan struct{}
}

// LoginOption adjusts a test user.
type LoginOption func(*loginOptions)

type loginOptions struct {
	verifier, crossSigning bool
	keyShare               func() bool
}

// WithKeyShare makes the user's device forward room keys to any device
// that asks while ok() holds (by default a device answers only its own
// user's verified devices); when ok() does not hold, requests go
// unanswered.
func WithKeyShare(ok func() bool) LoginOption { return func(o *loginOptions) { o.keyShare = ok } }

// WithCrossSigning sets up the user's cross-signing keys (as Element does)
// before the user's sync starts.
func WithCrossSigning() LoginOption { return func(o *loginOptions) { o.crossSigning = true } }

// WithVerifier gives the user an interactive verification helper (SAS).
func WithVerifier() LoginOption { return func(o *loginOptions) { o.verifier = true } }

// Verifier is the user's verification helper (WithVerifier), nil without.
func (u *User) Verifier() *Verifier { return u.verifier }

// Verifier is a test user's side of SAS verification; its callbacks report
// on channels, and the test drives the helper (VH) from its goroutine.
type Verifier struct {
	VH        *verificationhelper.VerificationHelper
	Ready     chan id.VerificationTransactionID
	SAS       chan []rune
	Done      chan id.VerificationTransactionID
	Cancelled chan string
	// TheirMAC receives a transaction once the other side's MAC came and
	// checked out (the other side confirmed).
	TheirMAC chan id.VerificationTransactionID
}

func newVerifier() *Verifier {
	return &Verifier{Ready: make(chan id.VerificationTransactionID, 4), SAS: make(chan []rune, 4),
		Done: make(chan id.VerificationTransactionID, 4), Cancelled: make(chan string, 4),
		TheirMAC: make(chan id.VerificationTransactionID, 4)}
}

// macStore is the helper's in-memory transaction store, reporting on
// TheirMAC when a transaction is first saved with their MAC received.
type macStore struct {
	*verificationhelper.InMemoryVerificationStore
	theirMAC chan<- id.VerificationTransactionID

	mu   sync.Mutex
	told map[id.VerificationTransactionID]bool
}

var _ verificationhelper.VerificationStore = (*macStore)(nil)

func (s *macStore) SaveVerificationTransaction(ctx context.Context, txn verificationhelper.VerificationTransaction) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if txn.ReceivedTheirMAC && !s.told[txn.TransactionID] {
		s.told[txn.TransactionID] = true
		select {
		case s.theirMAC <- txn.TransactionID:
		default:
		}
	}
	return s.InMemoryVerificationStore.SaveVerificationTransaction(ctx, txn)
}

func (v *Verifier) VerificationRequested(context.Context, id.VerificationTransactionID, id.UserID, id.DeviceID) {
}

func (v *Verifier) VerificationReady(_ context.Context, txn id.VerificationTransactionID, _ id.DeviceID, _, _ bool, _ *verificationhelper.QRCode) {
	v.Ready <- txn
}

func (v *Verifier) VerificationCancelled(_ context.Context, _ id.VerificationTransactionID, code event.VerificationCancelCode, reason string) {
	v.Cancelled <- string(code) + ": " + reason
}

func (v *Verifier) VerificationDone(_ context.Context, txn id.VerificationTransactionID, _ event.VerificationMethod) {
	v.Done <- txn
}

func (v *Verifier) ShowSAS(_ context.Context, _ id.VerificationTransactionID, emojis []rune, _ []string, _ []int) {
	v.SAS <- emojis
}

// Login logs name in as a new device with encryption and starts its sync;
// it stops when the test ends.
func (s *Server) Login(t testing.TB, name, password string, opts ...LoginOption) *User {
	t.Helper()
	var o loginOptions
	for _, f := range opts {
		f(&o)
	}
	ctx := context.Background()
	cli, err := mautrix.NewClient(s.URL(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	cli.DefaultHTTPRetries = 2
	if _, err := cli.Login(ctx, &mautrix.ReqLogin{Type: mautrix.AuthTypePassword,
		Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: name}, Password: password,
		InitialDeviceDisplayName: "matrixtest", StoreCredentials: true}); err != nil {
		t.Fatalf("login %s: %v", name, err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), name+".db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	dbu, err := dbutil.NewWithDB(db, "sqlite3")
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop()
	u := &User{ID: cli.UserID, Client: cli, db: db, changed: make(chan struct{}), done: make(chan struct{})}
	u.state = sqlstatestore.NewSQLStateStore(dbu, dbutil.ZeroLogger(log), false)
	if err := u.state.Upgrade(ctx); err != nil {
		t.Fatal(err)
	}
	cli.StateStore = u.state
	cs := crypto.NewSQLCryptoStore(dbu, dbutil.ZeroLogger(log), "", cli.DeviceID, []byte("test pickle key"))
	if err := cs.DB.Upgrade(ctx); err != nil {
		t.Fatal(err)
	}
	u.mach = crypto.NewOlmMachine(cli, &log, cs, u.state)
	if err := u.mach.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := u.mach.ShareKeys(ctx, -1); err != nil {
		t.Fatalf("share keys of %s: %v", name, err)
	}
	if o.keyShare != nil {
		u.mach.AllowKeyShare = func(context.Context, *id.Device, event.RequestedKeyInfo) *crypto.KeyShareRejection {
			if o.keyShare() {
				return nil
			}
			return &crypto.KeyShareRejectNoResponse
		}
	}
	cli.Crypto = helper{u}
	u.syncer = mautrix.NewDefaultSyncer()
	cli.Syncer = u.syncer
	u.syncer.OnSync(u.mach.ProcessSyncResponse)
	u.syncer.OnEvent(cli.StateStoreSyncHandler)
	u.syncer.OnEventType(event.StateMember, u.mach.HandleMemberEvent)
	u.syncer.OnEventType(event.EventEncrypted, u.onEncrypted)
	u.syncer.OnEvent(u.record)
	if o.verifier {
		u.verifier = newVerifier()
		store := &macStore{InMemoryVerificationStore: verificationhelper.NewInMemoryVerificationStore(),
			theirMAC: u.verifier.TheirMAC, told: map[id.VerificationTransactionID]bool{}}
		u.verifier.VH = verificationhelper.NewVerificationHelper(cli, u.mach, store, u.verifier, false, false, true)
		if err := u.verifier.VH.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if o.crossSigning {
		if _, _, err := u.mach.GenerateAndUploadCrossSigningKeysWithPassword(ctx, password, ""); err != nil {
			t.Fatalf("cross-signing of %s: %v", name, err)
		}
		if err := u.mach.SignOwnDevice(ctx, u.mach.OwnIdentity()); err != nil {
			t.Fatal(err)
		}
		if err := u.mach.SignOwnMasterKey(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	go u.run(sctx)
	t.Cleanup(u.Close)
	return u
}

// Close stops the user's sync and waits for it.
func (u *User) Close() {
	u.cancel()
	<-u.done
	_ = u.db.Close()
}

// DeviceID is the user's device.
func (u *User) DeviceID() id.DeviceID { return u.Client.DeviceID }

// Machine is the user's crypto machine.
func (u *User) Machine() *crypto.OlmMachine { return u.mach }

func (u *User) run(ctx context.Context) {
	defer close(u.done)
	since := ""
	for ctx.Err() == nil {
		resp, err := u.Client.FullSyncRequest(ctx, mautrix.ReqSync{Timeout: 5000, Since: since})
		if err != nil {
			select { // the homeserver may be restarting
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		_ = u.syncer.ProcessResponse(ctx, resp, since)
		u.retryPending(ctx)
		since = resp.NextBatch
	}
}

func (u *User) onEncrypted(ctx context.Context, evt *event.Event) {
	if evt.Mautrix.EventSource&event.SourceTimeline == 0 {
		return
	}
	dec, err := u.mach.DecryptMegolmEvent(ctx, evt)
	if err != nil {
		u.mu.Lock()
		u.pending = append(u.pending, evt)
		u.mu.Unlock()
		return
	}
	dec.Mautrix.EventSource = evt.Mautrix.EventSource | event.SourceDecrypted
	u.syncer.Dispatch(ctx, dec)
}

func (u *User) retryPending(ctx context.Context) {
	u.mu.Lock()
	pending := u.pending
	u.pending = nil
	u.mu.Unlock()
	for _, evt := range pending {
		dec, err := u.mach.DecryptMegolmEvent(ctx, evt)
		if err != nil {
			u.mu.Lock()
			u.pending = append(u.pending, evt)
			u.mu.Unlock()
			continue
		}
		dec.Mautrix.EventSource = evt.Mautrix.EventSource | event.SourceDecrypted
		u.syncer.Dispatch(ctx, dec)
	}
}

// record keeps every room event (decrypted ones again after decryption).
func (u *User) record(_ context.Context, evt *event.Event) {
	if evt.RoomID == "" {
		return
	}
	u.mu.Lock()
	u.events = append(u.events, evt)
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
}

// Events returns what the user saw so far.
func (u *User) Events() []*event.Event {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*event.Event(nil), u.events...)
}

// Wait waits until ok holds for the events seen so far.
func (u *User) Wait(t testing.TB, what string, ok func(evs []*event.Event) bool) []*event.Event {
	t.Helper()
	deadline := time.After(WaitTimeout)
	for {
		u.mu.Lock()
		evs := append([]*event.Event(nil), u.events...)
		ch := u.changed
		u.mu.Unlock()
		if ok(evs) {
			return evs
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: waited %s for %s; saw:\n%s", u.ID, WaitTimeout, what, describe(evs))
		}
	}
}

// Messages returns the m.room.message events from others in room, with
// edits applied to the message they replace (each message's latest text).
func Messages(evs []*event.Event, room id.RoomID, from id.UserID) []*event.Event {
	var out []*event.Event
	byID := map[id.EventID]int{}
	for _, e := range evs {
		if e.RoomID != room || e.Type != event.EventMessage || (from != "" && e.Sender != from) {
			continue
		}
		c := e.Content.AsMessage()
		if rid := c.RelatesTo.GetReplaceID(); rid != "" {
			if i, ok := byID[rid]; ok && c.NewContent != nil {
				ed := *out[i]
				ed.Content = event.Content{Parsed: c.NewContent}
				ed.Mautrix.EventSource = e.Mautrix.EventSource
				out[i] = &ed
			}
			continue
		}
		byID[e.ID] = len(out)
		out = append(out, e)
	}
	return out
}

// Membership returns the latest membership of user in room that u saw.
func Membership(evs []*event.Event, room id.RoomID, user id.UserID) event.Membership {
	var m event.Membership
	for _, e := range evs {
		if e.RoomID == room && e.Type == event.StateMember && e.GetStateKey() == user.String() {
			m = e.Content.AsMember().Membership
		}
	}
	return m
}

func describe(evs []*event.Event) string {
	out := ""
	for _, e := range evs {
		line := fmt.Sprintf("  %s %s %s", e.RoomID, e.Sender, e.Type.Type)
		switch e.Type {
		case event.EventMessage:
			c := e.Content.AsMessage()
			line += fmt.Sprintf(" %q", c.Body)
			if c.NewContent != nil {
				line += fmt.Sprintf(" (edit: %q)", c.NewContent.Body)
			}
		case event.StateMember:
			line += fmt.Sprintf(" %s %s", e.GetStateKey(), e.Content.AsMember().Membership)
		}
		out += line + "\n"
	}
	return out
}

// CreateRoom creates a room, inviting others; encrypted turns Megolm on.
// With one invitee it is a direct chat.
func (u *User) CreateRoom(t testing.TB, encrypted bool, invite ...string) id.RoomID {
	t.Helper()
	ctx := context.Background()
	req := &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: len(invite) == 1}
	for _, i := range invite {
		req.Invite = append(req.Invite, id.UserID(i))
	}
	if encrypted {
		req.InitialState = []*event.Event{{Type: event.StateEncryption, StateKey: new(string),
			Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}}}
	}
	resp, err := u.Client.CreateRoom(ctx, req)
	if err != nil {
		t.Fatalf("create room: %v", err)
	}
	if encrypted {
		if err := u.state.SetEncryptionEvent(ctx, resp.RoomID, &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}); err != nil {
			t.Fatal(err)
		}
	}
	return resp.RoomID
}

// Send sends a text message (encrypted in encrypted rooms).
func (u *User) Send(t testing.TB, room id.RoomID, text string) id.EventID {
	t.Helper()
	return u.SendContent(t, room, &event.MessageEventContent{MsgType: event.MsgText, Body: text})
}

// SendContent sends a message event (encrypted in encrypted rooms).
func (u *User) SendContent(t testing.TB, room id.RoomID, content *event.MessageEventContent) id.EventID {
	t.Helper()
	resp, err := u.Client.SendMessageEvent(context.Background(), room, event.EventMessage, content)
	if err != nil {
		t.Fatalf("%s sends to %s: %v", u.ID, room, err)
	}
	return resp.EventID
}

// helper is the user's mautrix.CryptoHelper.
type helper struct{ u *User }

func (h helper) Encrypt(ctx context.Context, room id.RoomID, typ event.Type, content any) (*event.EncryptedEventContent, error) {
	enc, err := h.u.mach.EncryptMegolmEvent(ctx, room, typ, content)
	if err == nil {
		return enc, nil
	}
	if !errors.Is(err, crypto.ErrSessionExpired) && !errors.Is(err, crypto.ErrNoGroupSession) && !errors.Is(err, crypto.ErrSessionNotShared) {
		return nil, err
	}
	users, err := h.u.state.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		return nil, err
	}
	if err := h.u.mach.ShareGroupSession(ctx, room, users); err != nil {
		return nil, err
	}
	return h.u.mach.EncryptMegolmEvent(ctx, room, typ, content)
}

func (h helper) Decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	return h.u.mach.DecryptMegolmEvent(ctx, evt)
}

func (h helper) WaitForSession(ctx context.Context, room id.RoomID, key id.SenderKey, sess id.SessionID, d time.Duration) bool {
	return h.u.mach.WaitForSession(ctx, room, key, sess, d)
}

func (h helper) RequestSession(context.Context, id.RoomID, id.SenderKey, id.SessionID, id.UserID, id.DeviceID) {
}

func (h helper) Init(context.Context) error { return nil }

var _ mautrix.CryptoHelper = helper{}

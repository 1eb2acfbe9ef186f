package matrix

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"

	// The pure-Go SQLite driver ("sqlite"), as the rest of Reverie uses.
	_ "modernc.org/sqlite"
)

// cryptoDBName is the channel's own SQLite file under <data>/matrix: the
// room state store and the Olm/Megolm crypto store (mautrix's schemas).
const cryptoDBName = "crypto.db"

// setupStores opens <data>/matrix/crypto.db, the room state store and,
// with encryption on, the crypto machine; then registers the sync
// handlers. It runs once, before the first sync.
func (m *Matrix) setupStores(ctx context.Context) error {
	if m.db == nil {
		dir := stateDir(m.host.DataDir())
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("matrix store: %w", err)
		}
		path := filepath.Join(dir, cryptoDBName)
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Set("_txlock", "immediate")
		db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		db.SetMaxOpenConns(1) // one writer; mautrix's transactions nest on the context
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600); err == nil {
			_ = f.Close()
		}
		m.db = db
	}
	zl := m.zl
	dbu, err := dbutil.NewWithDB(m.db, "sqlite3")
	if err != nil {
		return fmt.Errorf("matrix store: %w", err)
	}
	m.stateStore = sqlstatestore.NewSQLStateStore(dbu, dbutil.ZeroLogger(zl), false)
	if err := m.stateStore.Upgrade(ctx); err != nil {
		return fmt.Errorf("matrix state store: %w", err)
	}
	m.cli.StateStore = m.stateStore
	m.syncer.OnEvent(m.cli.StateStoreSyncHandler)
	if m.cfg.Encryption {
		if err := m.setupCrypto(ctx, dbu, zl); err != nil {
			return err
		}
	} else {
		m.syncer.OnEventType(event.EventEncrypted, m.handleUnencryptable)
	}
	m.syncer.OnEventType(event.StateMember, m.handleMember)
	m.syncer.OnEventType(event.EventMessage, m.handleMessage)
	m.syncer.OnEventType(event.EventSticker, m.handleMessage)
	return nil
}

// setupCrypto loads (or creates) the device's Olm account, makes sure its
// keys are on the homeserver, and bootstraps cross-signing.
func (m *Matrix) setupCrypto(ctx context.Context, dbu *dbutil.Database, zl zerolog.Logger) error {
	if m.mach != nil {
		return nil
	}
	m.mu.Lock()
	pickle := m.sess.PickleKey
	m.mu.Unlock()
	cs := crypto.NewSQLCryptoStore(dbu, dbutil.ZeroLogger(zl), "", m.cli.DeviceID, []byte(pickle))
	if err := cs.DB.Upgrade(ctx); err != nil {
		return fmt.Errorf("matrix crypto store: %w", err)
	}
	stored, err := cs.FindDeviceID(ctx)
	if err != nil {
		return fmt.Errorf("matrix crypto store: %w", err)
	}
	if stored != "" && stored != m.cli.DeviceID {
		return fmt.Errorf("%w: the crypto store %s belongs to device %s, but the session is device %s; "+
			"delete %s to start over with new keys", extension.ErrInvalidConfig,
			filepath.Join(stateDir(m.host.DataDir()), cryptoDBName), stored, m.cli.DeviceID, stateDir(m.host.DataDir()))
	}
	mach := crypto.NewOlmMachine(m.cli, &zl, cs, m.stateStore)
	if err := mach.Load(ctx); err != nil {
		return fmt.Errorf("load the matrix olm account: %w", err)
	}
	if err := m.shareDeviceKeys(ctx, mach); err != nil {
		return err
	}
	m.mach = mach
	m.cli.Crypto = cryptoHelper{m}
	m.syncer.OnSync(mach.ProcessSyncResponse)
	m.syncer.OnEventType(event.StateMember, mach.HandleMemberEvent)
	m.syncer.OnEventType(event.StateHistoryVisibility, mach.HandleHistoryVisibility)
	m.syncer.OnEventType(event.EventEncrypted, m.handleEncrypted)
	m.loadPending(ctx)
	if err := m.setupVerification(ctx); err != nil {
		return err
	}
	if err := m.bootstrapCrossSigning(ctx); err != nil {
		// Encryption works without it; clients show the device unverified.
		m.log.Warn("matrix cross-signing is not set up; the bot's device shows as unverified", "err", err)
	}
	return nil
}

// shareDeviceKeys uploads the device's identity and one-time keys unless
// the homeserver has them already.
func (m *Matrix) shareDeviceKeys(ctx context.Context, mach *crypto.OlmMachine) error {
	var resp *mautrix.RespQueryKeys
	err := m.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = m.cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{DeviceKeys: mautrix.DeviceKeysRequest{m.cli.UserID: {m.cli.DeviceID}}})
		return err
	})
	if err != nil {
		return fmt.Errorf("query the bot's device keys: %w", err)
	}
	device, ok := resp.DeviceKeys[m.cli.UserID][m.cli.DeviceID]
	shared := mach.GetAccount().Shared
	switch {
	case !ok || len(device.Keys) == 0:
		if shared {
			return fmt.Errorf("the homeserver lost device %s's keys; delete %s to start over with a new device",
				m.cli.DeviceID, stateDir(m.host.DataDir()))
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		if err := mach.ShareKeys(cctx, -1); err != nil {
			return fmt.Errorf("upload the bot's device keys: %w", m.scrub(err))
		}
	case !shared:
		return fmt.Errorf("device %s has keys on the homeserver that this data dir does not know; "+
			"delete %s to log in as a new device", m.cli.DeviceID, sessionPath(m.host.DataDir()))
	case device.Keys.GetEd25519(m.cli.DeviceID) != mach.OwnIdentity().SigningKey:
		return fmt.Errorf("device %s's signing key on the homeserver differs from ours", m.cli.DeviceID)
	}
	return nil
}

// recoveryKeyPath is matrix.recovery_key_file, relative to the data dir.
func (m *Matrix) recoveryKeyPath() string {
	p := m.cfg.RecoveryKeyFile
	if !filepath.IsAbs(p) {
		p = filepath.Join(m.host.DataDir(), p)
	}
	return p
}

// bootstrapCrossSigning makes the bot's device verified in clients: on
// first start it creates the cross-signing keys, stores them in secret
// storage under a new recovery key (written to recovery_key_file, mode
// 0600), and signs the device; later starts unlock them with that key.
func (m *Matrix) bootstrapCrossSigning(ctx context.Context) error {
	path := m.recoveryKeyPath()
	cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	pub, err := m.mach.GetOwnCrossSigningPublicKeys(cctx)
	if err != nil && !errors.Is(err, mautrix.MNotFound) {
		return fmt.Errorf("read the cross-signing keys: %w", m.scrub(err))
	}
	if b, rerr := os.ReadFile(path); rerr == nil {
		if pub == nil {
			return fmt.Errorf("%s exists but the account has no cross-signing keys; delete the file to make new ones", path)
		}
		key := strings.TrimSpace(string(b))
		m.host.RegisterSecret(key)
		if err := m.mach.VerifyWithRecoveryKey(cctx, key); err != nil {
			return fmt.Errorf("unlock the cross-signing keys with %s: %w", path, m.scrub(err))
		}
		return nil
	} else if !errors.Is(rerr, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, rerr)
	}
	if pub != nil {
		return fmt.Errorf("the account has cross-signing keys but %s is missing: put the recovery key there "+
			"(or reset cross-signing from another client) to verify the bot's device", path)
	}
	uia := func(resp *mautrix.RespUserInteractive) any {
		if m.password == "" {
			return nil
		}
		return &mautrix.ReqUIAuthLogin{BaseAuthData: mautrix.BaseAuthData{Type: mautrix.AuthTypePassword, Session: resp.Session},
			User: m.cfg.UserID, Password: m.password}
	}
	rk, _, err := m.mach.GenerateAndUploadCrossSigningKeys(cctx, uia, "")
	if rk != "" {
		m.host.RegisterSecret(rk)
		if werr := writeSecretFile(path, rk+"\n"); werr != nil {
			return errors.Join(m.scrub(err), werr)
		}
	}
	if err != nil {
		return fmt.Errorf("create the cross-signing keys: %w", m.scrub(err))
	}
	if err := m.mach.SignOwnDevice(cctx, m.mach.OwnIdentity()); err != nil {
		return fmt.Errorf("sign the bot's device: %w", m.scrub(err))
	}
	if err := m.mach.SignOwnMasterKey(cctx); err != nil {
		return fmt.Errorf("sign the bot's master key: %w", m.scrub(err))
	}
	m.log.Info("matrix cross-signing set up; the recovery key is in "+path+" (keep it safe)", "device", m.cli.DeviceID)
	return nil
}

// writeSecretFile writes data to path with mode 0600 (directories 0700),
// refusing to replace an existing file.
func writeSecretFile(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.WriteString(data)
	return errors.Join(err, f.Sync(), f.Close())
}

// cryptoHelper is the channel as mautrix.CryptoHelper: the client encrypts
// the events it sends to encrypted rooms with it.
type cryptoHelper struct{ m *Matrix }

// Encrypt implements mautrix.CryptoHelper: the client encrypts every event
// sent to an encrypted room with it, sharing the room's session with its
// members' devices first when needed.
func (h cryptoHelper) Encrypt(ctx context.Context, roomID id.RoomID, evtType event.Type, content any) (*event.EncryptedEventContent, error) {
	m := h.m
	enc, err := m.mach.EncryptMegolmEvent(ctx, roomID, evtType, content)
	if err == nil {
		return enc, nil
	}
	if !errors.Is(err, crypto.ErrSessionExpired) && !errors.Is(err, crypto.ErrNoGroupSession) && !errors.Is(err, crypto.ErrSessionNotShared) {
		return nil, err
	}
	users, err := m.stateStore.GetRoomJoinedOrInvitedMembers(ctx, roomID)
	if err != nil {
		return nil, fmt.Errorf("list the room's members: %w", err)
	}
	if err := m.mach.ShareGroupSession(ctx, roomID, users); err != nil {
		return nil, fmt.Errorf("share the room key: %w", err)
	}
	return m.mach.EncryptMegolmEvent(ctx, roomID, evtType, content)
}

// Decrypt implements mautrix.CryptoHelper.
func (h cryptoHelper) Decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	return h.m.mach.DecryptMegolmEvent(ctx, evt)
}

// WaitForSession implements mautrix.CryptoHelper.
func (h cryptoHelper) WaitForSession(ctx context.Context, roomID id.RoomID, senderKey id.SenderKey, sessionID id.SessionID, timeout time.Duration) bool {
	return h.m.mach.WaitForSession(ctx, roomID, senderKey, sessionID, timeout)
}

// RequestSession implements mautrix.CryptoHelper: ask the sender's device
// (and our own other devices) for a room key.
func (h cryptoHelper) RequestSession(ctx context.Context, roomID id.RoomID, senderKey id.SenderKey, sessionID id.SessionID, userID id.UserID, deviceID id.DeviceID) {
	h.m.requestSession(ctx, roomID, senderKey, sessionID, userID, deviceID)
}

func (m *Matrix) requestSession(ctx context.Context, roomID id.RoomID, senderKey id.SenderKey, sessionID id.SessionID, userID id.UserID, deviceID id.DeviceID) {
	if deviceID == "" {
		deviceID = "*"
	}
	err := m.mach.SendRoomKeyRequest(ctx, roomID, senderKey, sessionID, "", map[id.UserID][]id.DeviceID{
		userID: {deviceID}, m.cli.UserID: {"*"},
	})
	if err != nil {
		m.log.Warn("could not ask for a matrix room key", "room", roomID, "session", sessionID, "err", m.scrub(err))
	}
}

// Init implements mautrix.CryptoHelper (setupCrypto did the work).
func (cryptoHelper) Init(context.Context) error { return nil }

// pendingEvent is an encrypted event waiting for its room key.
type pendingEvent struct {
	evt       *event.Event
	since     time.Time
	requested bool
}

// handleEncrypted decrypts an event and dispatches the result; an event
// whose key has not arrived waits in pending (the sync goroutine retries
// it after every sync and asks the sender for the key).
func (m *Matrix) handleEncrypted(ctx context.Context, evt *event.Event) {
	if evt.Mautrix.EventSource&event.SourceJoin == 0 || evt.Sender == m.cli.UserID {
		return
	}
	dec, err := m.mach.DecryptMegolmEvent(ctx, evt)
	if err == nil {
		dec.Mautrix.EventSource = evt.Mautrix.EventSource | event.SourceDecrypted
		m.syncer.Dispatch(ctx, dec)
		return
	}
	if !m.allowed[evt.Sender] {
		return // nobody will answer it anyway
	}
	if handled, herr := m.store.handled(ctx, string(evt.ID)); herr == nil && handled {
		return
	}
	if errors.Is(err, crypto.ErrNoSessionFound) {
		m.addPending(ctx, evt)
		return
	}
	m.log.Warn("could not decrypt a matrix message", "room", evt.RoomID, "sender", evt.Sender, "err", err)
	m.tellUndecryptable(ctx, evt)
}

// addPending keeps evt waiting for its key, in memory and in
// matrix_pending (a restart retries it too).
func (m *Matrix) addPending(ctx context.Context, evt *event.Event) {
	for _, p := range m.pending {
		if p.evt.ID == evt.ID {
			return // a batch fetched again, or the stored copy
		}
	}
	p := &pendingEvent{evt: evt, since: m.host.Now()}
	m.pending = append(m.pending, p)
	b, err := json.Marshal(evt)
	if err == nil {
		err = m.store.addPending(ctx, string(evt.ID), string(evt.RoomID), b, p.since)
	}
	if err != nil {
		m.log.Warn("could not keep an unreadable matrix message for a retry after a restart", "event", evt.ID, "err", err)
	}
}

func (m *Matrix) forgetPending(ctx context.Context, evID id.EventID) {
	if err := m.store.removePending(ctx, string(evID)); err != nil {
		m.log.Warn("could not forget a waiting matrix message", "event", evID, "err", err)
	}
}

// loadPending reads the events still waiting for their keys when the
// channel last stopped; the first sync retries them (keys sent while
// Reverie was down arrive in it), and those still unreadable wait
// DecryptWait again from now, their keys asked for again.
func (m *Matrix) loadPending(ctx context.Context) {
	rows, err := m.store.pendingEvents(ctx)
	if err != nil {
		m.log.Warn("the matrix messages waiting for their keys are not retried after this restart", "err", err)
		return
	}
	for _, r := range rows {
		evt := &event.Event{}
		err := json.Unmarshal(r.event, evt)
		if err == nil {
			evt.Type.Class = event.MessageEventType
			err = evt.Content.ParseRaw(evt.Type)
		}
		if err != nil || evt.Type != event.EventEncrypted {
			m.log.Warn("a stored matrix message waiting for its key is unreadable; dropped", "event", r.id, "err", err)
			m.forgetPending(ctx, id.EventID(r.id))
			continue
		}
		evt.Mautrix.EventSource = event.SourceJoin | event.SourceTimeline
		m.pending = append(m.pending, &pendingEvent{evt: evt, since: m.host.Now()})
	}
}

// retryPending tries the waiting events again: decrypted ones are
// dispatched, keys are asked for those still missing them, and after
// DecryptWait the sender is told (once per session).
func (m *Matrix) retryPending(ctx context.Context) {
	if len(m.pending) == 0 {
		return
	}
	keep := m.pending[:0]
	now := m.host.Now()
	for _, p := range m.pending {
		dec, err := m.mach.DecryptMegolmEvent(ctx, p.evt)
		switch {
		case err == nil:
			dec.Mautrix.EventSource = p.evt.Mautrix.EventSource | event.SourceDecrypted
			m.syncer.Dispatch(ctx, dec)
			m.forgetPending(ctx, p.evt.ID)
		case errors.Is(err, crypto.ErrNoSessionFound) && now.Sub(p.since) < m.opts.DecryptWait:
			if !p.requested {
				content := p.evt.Content.AsEncrypted()
				m.requestSession(ctx, p.evt.RoomID, content.SenderKey, content.SessionID, p.evt.Sender, content.DeviceID)
				p.requested = true
			}
			keep = append(keep, p)
		case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			// Stopping (or the call timed out): not a verdict on the
			// message. It stays stored and is tried again after the
			// restart; before, the shutdown's cancellation read as "stays
			// unreadable" and the message was forgotten.
			keep = append(keep, p)
		default:
			m.log.Warn("a matrix message stays unreadable", "room", p.evt.RoomID, "sender", p.evt.Sender, "err", err)
			m.tellUndecryptable(ctx, p.evt)
			m.forgetPending(ctx, p.evt.ID)
		}
	}
	clear(m.pending[len(keep):])
	m.pending = keep
}

// tellUndecryptable tells the sender, once per Megolm session, that their
// message could not be read.
func (m *Matrix) tellUndecryptable(ctx context.Context, evt *event.Event) {
	content := evt.Content.AsEncrypted()
	if m.told[content.SessionID] {
		return
	}
	m.told[content.SessionID] = true
	m.notice(ctx, evt.RoomID, "I could not decrypt your message (its key never reached my device). "+
		"Please send it again; if this keeps happening, verify my device or start a new encrypted chat.")
}

// handleUnencryptable answers an encrypted message when encryption is off.
func (m *Matrix) handleUnencryptable(ctx context.Context, evt *event.Event) {
	if evt.Mautrix.EventSource&event.SourceJoin == 0 || !m.allowed[evt.Sender] {
		return
	}
	content := evt.Content.AsEncrypted()
	if m.told[content.SessionID] {
		return
	}
	m.told[content.SessionID] = true
	m.notice(ctx, evt.RoomID, "This room is encrypted, but my encryption is turned off (matrix.encryption: false), so I cannot read it.")
}

var _ mautrix.CryptoHelper = cryptoHelper{}

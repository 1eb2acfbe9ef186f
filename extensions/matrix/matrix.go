package matrix

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
	"github.com/reverie-ai/reverie/tool"
)

// ID is the extension id; ChannelName the channel part of its threads.
const (
	ID          = "matrix"
	ChannelName = "matrix"
)

// Timeouts and backoff.
const (
	// callTimeout bounds every homeserver call but the long poll.
	callTimeout = 30 * time.Second
	// DefaultSyncTimeout is the long-poll timeout asked of /sync.
	DefaultSyncTimeout = 30 * time.Second
	// maxTransientWait bounds the time one call waits between retries
	// after transient failures (the network, a timeout, a 5xx answer): a
	// homeserver that errors for a minute (a restart, a locked database)
	// delays a reply, it does not drop it.
	maxTransientWait = 2 * time.Minute
	// maxLimitedWait bounds the time one call waits out rate limits.
	maxLimitedWait = 5 * time.Minute
)

func init() { extension.Register(Info(Options{})) }

// Options adjust the channel for tests; the zero value is production.
type Options struct {
	// Sleep waits d or until ctx ends (backoff, retry_after_ms). Nil: a
	// timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// SyncTimeout is the long-poll timeout asked of /sync (default
	// DefaultSyncTimeout).
	SyncTimeout time.Duration
	// DecryptWait is how long an event that cannot be decrypted waits for
	// its keys (asked for after the first sync without them) before the
	// sender is told (default one minute).
	DecryptWait time.Duration
}

// Info is the channel's registration with opts (the built-in one uses the
// zero Options; tests register their own).
func Info(opts Options) extension.Info {
	info := channelkit.Info(ID, "Matrix channel (end-to-end encryption, streaming by message edits)",
		Configured, func() extension.Extension { return New(opts) })
	info.NotConfigured = "the matrix: section lacks homeserver, user_id or a password/access_token, so the channel is off"
	return info
}

// New returns an uninitialised channel.
func New(opts Options) *Matrix {
	if opts.Sleep == nil {
		opts.Sleep = extension.Sleep
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.DecryptWait <= 0 {
		opts.DecryptWait = time.Minute
	}
	return &Matrix{opts: opts}
}

// Matrix is the channel extension.
type Matrix struct {
	opts     Options
	cfg      Config
	host     extension.Host
	log      *slog.Logger
	store    *store
	wsDir    string
	password string // resolved matrix.password ("" with an access token)
	token    string // resolved matrix.access_token
	allowed  map[id.UserID]bool
	hc       *http.Client

	cli    *mautrix.Client
	syncer *mautrix.DefaultSyncer
	sess   session
	zl     zerolog.Logger // for the stores and the crypto machine

	// Set up by connect, before the sync loop, and read-only afterwards.
	db         *sql.DB // <data>/matrix/crypto.db
	stateStore *sqlstatestore.SQLStateStore
	mach       *crypto.OlmMachine // nil with encryption off
	verify     *verifier          // nil with encryption off

	mu        sync.Mutex
	loggedIn  bool
	ready     bool // crypto and state store set up
	lastErr   error
	strangers map[id.UserID]bool // logged once

	// Used by the sync goroutine only.
	batchErr error                 // a message of this batch was not accepted
	pending  []*pendingEvent       // events waiting for their keys
	told     map[id.SessionID]bool // senders told a session stays unreadable
	first    bool                  // the first sync of this login

	streams sync.WaitGroup

	// stopping ends retries when Run returns (the agent is stopping): a
	// reply being delivered gets the attempt it is in, not minutes of
	// waits that would hold up the shutdown.
	stopping channelkit.Stopping
}

// Init decodes the section, opens the channel's tables and logs in (or
// reuses the stored session): credentials the homeserver refuses are a
// configuration error; an unreachable homeserver is retried by Run.
func (m *Matrix) Init(ctx context.Context, host extension.Host) error {
	cfg, err := decodeConfig(host.DecodeConfig)
	if err != nil {
		return err
	}
	m.cfg, m.host, m.log = cfg, host, host.Logger()
	if cfg.Password.IsSet() {
		if m.password, err = cfg.Password.Resolve(host.DataDir()); err != nil {
			return fmt.Errorf("%w: matrix.password (%s): %w", extension.ErrInvalidConfig, cfg.Password.Source(), err)
		}
		host.RegisterSecret(m.password)
	} else {
		if m.token, err = cfg.AccessToken.Resolve(host.DataDir()); err != nil {
			return fmt.Errorf("%w: matrix.access_token (%s): %w", extension.ErrInvalidConfig, cfg.AccessToken.Source(), err)
		}
		host.RegisterSecret(m.token)
	}
	m.wsDir = filepath.Join(host.DataDir(), "workspace")
	m.allowed = map[id.UserID]bool{}
	for _, u := range cfg.AllowedUsers {
		m.allowed[id.UserID(u)] = true
	}
	m.strangers = map[id.UserID]bool{}
	m.told = map[id.SessionID]bool{}
	if err := host.Migrate(ctx, component, migrationFiles, "migrations"); err != nil {
		return err
	}
	m.store = &store{db: host.DB(), now: host.Now}
	m.hc = &http.Client{Timeout: m.opts.SyncTimeout + callTimeout}
	m.cli, err = mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), "")
	if err != nil {
		return fmt.Errorf("%w: matrix.homeserver %q: %w", extension.ErrInvalidConfig, cfg.Homeserver, err)
	}
	m.cli.Client = m.hc
	m.cli.DefaultHTTPRetries = 0 // retries are ours: they honour retry_after_ms and ctx
	// mautrix logs every failed request; the channel reports those itself.
	// The crypto machine's warnings go to the extension's log.
	m.cli.Log = zerolog.Nop()
	m.zl = zerolog.New(slogWriter{m.log}).Level(zerolog.WarnLevel)
	m.syncer = mautrix.NewDefaultSyncer()
	m.syncer.ParseErrorHandler = func(evt *event.Event, err error) bool {
		// Unknown types pass, as do events the crypto machine parsed
		// already; known events that do not parse are dropped.
		if errors.Is(err, event.ErrUnsupportedContentType) || errors.Is(err, event.ErrContentAlreadyParsed) {
			return true
		}
		m.log.Debug("unparsable matrix event ignored", "type", evt.Type.Type, "event", evt.ID, "err", err)
		return false
	}
	m.cli.Syncer = m.syncer
	m.cli.Store = mautrix.NewMemorySyncStore() // the sync token is ours (matrix_state)

	lctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err = m.login(lctx)
	m.hc.CloseIdleConnections() // Init leaves no connection behind
	if err != nil {
		if errors.Is(err, extension.ErrInvalidConfig) {
			return err
		}
		if wait, ok := retryAfter(err); ok {
			m.log.Warn("the Matrix homeserver asks to slow down; the channel logs in after the wait", "retry_after", wait)
		} else {
			m.log.Warn("the Matrix homeserver is not reachable now; the channel keeps trying", "err", err)
		}
		m.setErr(err)
	}
	return nil
}

// login reuses the stored session when it still works, or logs in with
// the configured credential and stores the new session.
func (m *Matrix) login(ctx context.Context) error {
	path := sessionPath(m.host.DataDir())
	s, err := loadSession(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("the stored Matrix session is unusable; logging in again", "err", err)
	}
	if err != nil || s.UserID != m.cfg.UserID || s.Homeserver != m.cfg.Homeserver {
		s = session{}
	}
	if s.AccessToken != "" {
		m.host.RegisterSecret(s.AccessToken)
	}
	if m.token != "" {
		// An access token from the configuration: ask who it belongs to.
		m.cli.AccessToken = m.token
		who, err := m.cli.Whoami(ctx)
		if err != nil {
			if isAuthError(err) {
				return fmt.Errorf("%w: matrix.access_token (%s): the homeserver refused it (%v)",
					extension.ErrInvalidConfig, m.cfg.AccessToken.Source(), m.scrub(err))
			}
			return fmt.Errorf("whoami: %w", m.scrub(err))
		}
		if string(who.UserID) != m.cfg.UserID {
			return fmt.Errorf("%w: matrix.access_token (%s) belongs to %s, not to matrix.user_id %s",
				extension.ErrInvalidConfig, m.cfg.AccessToken.Source(), who.UserID, m.cfg.UserID)
		}
		if who.DeviceID == "" {
			return fmt.Errorf("%w: matrix.access_token (%s) has no device; use matrix.password, or a token from a login",
				extension.ErrInvalidConfig, m.cfg.AccessToken.Source())
		}
		if s.DeviceID != string(who.DeviceID) {
			s = session{Homeserver: m.cfg.Homeserver, UserID: m.cfg.UserID, DeviceID: string(who.DeviceID)}
		}
		s.AccessToken = "" // the configuration has it
		return m.useSession(s, m.token)
	}
	if s.AccessToken != "" {
		m.cli.AccessToken, m.cli.DeviceID = s.AccessToken, id.DeviceID(s.DeviceID)
		who, err := m.cli.Whoami(ctx)
		switch {
		case err == nil && string(who.UserID) == m.cfg.UserID && string(who.DeviceID) == s.DeviceID:
			return m.useSession(s, s.AccessToken)
		case err == nil || isAuthError(err):
			m.log.Info("the stored Matrix session is no longer valid; logging in again with the same device", "device", s.DeviceID)
		default:
			return fmt.Errorf("whoami: %w", m.scrub(err))
		}
	}
	resp, err := m.cli.Login(ctx, &mautrix.ReqLogin{
		Type:                     mautrix.AuthTypePassword,
		Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: m.cfg.UserID},
		Password:                 m.password,
		DeviceID:                 id.DeviceID(s.DeviceID),
		InitialDeviceDisplayName: m.cfg.DeviceName,
	})
	if err != nil {
		if isAuthError(err) {
			return fmt.Errorf("%w: matrix.password (%s): the homeserver refused the login of %s (%v)",
				extension.ErrInvalidConfig, m.cfg.Password.Source(), m.cfg.UserID, m.scrub(err))
		}
		return fmt.Errorf("log in to %s: %w", m.cfg.Homeserver, m.scrub(err))
	}
	m.host.RegisterSecret(resp.AccessToken)
	if string(resp.DeviceID) != s.DeviceID {
		s = session{Homeserver: m.cfg.Homeserver, UserID: m.cfg.UserID} // a new device: new keys
	}
	s.DeviceID, s.AccessToken = string(resp.DeviceID), resp.AccessToken
	return m.useSession(s, resp.AccessToken)
}

// useSession stores s (with a pickle key) and points the client at it.
func (m *Matrix) useSession(s session, token string) error {
	if s.PickleKey == "" {
		k, err := newPickleKey()
		if err != nil {
			return fmt.Errorf("make a pickle key: %w", err)
		}
		s.PickleKey = k
	}
	s.Homeserver, s.UserID = m.cfg.Homeserver, m.cfg.UserID
	if err := s.save(sessionPath(m.host.DataDir())); err != nil {
		return err
	}
	m.cli.AccessToken, m.cli.DeviceID, m.cli.UserID = token, id.DeviceID(s.DeviceID), id.UserID(s.UserID)
	m.mu.Lock()
	m.sess, m.loggedIn = s, true
	m.mu.Unlock()
	return nil
}

// isAuthError reports an error about the credentials (wrong password,
// unknown token, deactivated account).
func isAuthError(err error) bool {
	return errors.Is(err, mautrix.MForbidden) || errors.Is(err, mautrix.MUnknownToken) ||
		errors.Is(err, mautrix.MUserDeactivated) || errors.Is(err, mautrix.MMissingToken)
}

// scrub removes the credentials from an error's text (mautrix errors can
// quote request URLs and bodies).
func (m *Matrix) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := m.host.Redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

func (m *Matrix) setErr(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

// Health reports the sync loop's last failure.
func (m *Matrix) Health(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastErr != nil {
		return m.lastErr
	}
	if !m.loggedIn {
		return errors.New("not logged in to the Matrix homeserver yet")
	}
	return nil
}

// CheckConfig decodes and validates the section as Init does, without
// reading secrets or calling the homeserver (`reverie doctor`; its
// homeserver check is Check).
func (m *Matrix) CheckConfig(decode func(v any) error) error {
	_, err := decodeConfig(decode)
	return err
}

// ChannelName implements extension.ChannelProvider.
func (m *Matrix) ChannelName() string { return ChannelName }

func (m *Matrix) isLoggedIn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loggedIn
}

func (m *Matrix) isReady() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

// Run logs in (if Init could not), sets up the stores and encryption, and
// syncs until ctx ends.
func (m *Matrix) Run(ctx context.Context) error {
	defer m.hc.CloseIdleConnections()
	defer m.stopping.Stop()
	if wait, ok := retryAfter(m.Health(ctx)); ok {
		// Init's login was rate-limited: wait as the homeserver asked.
		if m.opts.Sleep(ctx, wait) != nil {
			return nil
		}
	}
	b := &channelkit.Backoff{Sleep: m.opts.Sleep}
	for !m.isReady() {
		err := m.connect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			break
		}
		if errors.Is(err, extension.ErrInvalidConfig) {
			m.setErr(err)
			m.log.Error("the Matrix channel cannot log in; fix the configuration and restart", "err", err)
			<-ctx.Done()
			return nil
		}
		if m.sleepAfter(ctx, err, b) != nil {
			return nil
		}
	}
	b.Succeeded()
	m.setErr(nil)
	m.log.Info("matrix connected", "user", m.cfg.UserID, "device", m.cli.DeviceID, "encryption", m.mach != nil)
	return m.syncLoop(ctx, b)
}

// connect logs in when needed and sets up the stores and encryption once.
func (m *Matrix) connect(ctx context.Context) error {
	if !m.isLoggedIn() {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := m.login(cctx)
		cancel()
		if err != nil {
			return err
		}
	}
	if err := m.setupStores(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	m.ready = true
	m.mu.Unlock()
	return nil
}

// syncLoop asks /sync for what is new, hands it to the handlers, and
// stores the token only once every message of the batch was accepted: a
// crash or a refused message means the batch is fetched again, and the
// handled-events table keeps it from being answered twice.
func (m *Matrix) syncLoop(ctx context.Context, b *channelkit.Backoff) error {
	since, err := m.store.value(ctx, "next_batch")
	if err != nil {
		return err
	}
	filterID, err := m.filter(ctx)
	if err != nil {
		return err
	}
	m.first = since == ""
	for {
		timeout := int(m.opts.SyncTimeout.Milliseconds())
		if b.Failures() > 0 || since == "" {
			timeout = 0
		}
		resp, err := m.cli.FullSyncRequest(ctx, mautrix.ReqSync{Timeout: timeout, Since: since, FilterID: filterID})
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = m.processSync(ctx, resp, since)
			if ctx.Err() != nil {
				return nil
			}
		}
		if err != nil {
			if errors.Is(err, mautrix.MUnknownToken) && m.password != "" {
				m.mu.Lock()
				m.loggedIn = false
				m.mu.Unlock()
				lctx, cancel := context.WithTimeout(ctx, callTimeout)
				lerr := m.login(lctx)
				cancel()
				if lerr == nil {
					continue
				}
				err = lerr
			}
			if m.sleepAfter(ctx, m.scrub(err), b) != nil {
				return nil
			}
			continue
		}
		if b.Succeeded() {
			m.log.Info("matrix sync works again")
		}
		m.setErr(nil)
		if err := m.store.setValue(ctx, "next_batch", resp.NextBatch); err != nil {
			m.log.Error("could not store the Matrix sync token; a restart fetches this batch again", "err", err)
		}
		since = resp.NextBatch
		m.first = false
	}
}

// processSync hands one /sync response to the crypto machine, the state
// store and the handlers; an error means a message was not accepted.
func (m *Matrix) processSync(ctx context.Context, resp *mautrix.RespSync, since string) error {
	m.batchErr = nil
	ctx = m.zl.WithContext(ctx) // mautrix's handlers log through the context
	if m.first {
		// The first sync of a login: what is in the rooms already is
		// history, not questions.
		now := m.host.Now().UnixMilli()
		for roomID := range resp.Rooms.Join {
			if err := m.store.setFloor(ctx, string(roomID), now); err != nil {
				return err
			}
		}
	}
	if err := m.syncer.ProcessResponse(ctx, resp, since); err != nil {
		return err
	}
	m.retryPending(ctx)
	m.runVerifications(ctx)
	return m.batchErr
}

// filter returns the stored sync filter, creating it once.
func (m *Matrix) filter(ctx context.Context) (string, error) {
	f, err := m.store.value(ctx, "filter_id")
	if err != nil || f != "" {
		return f, err
	}
	var resp *mautrix.RespCreateFilter
	err = m.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = m.cli.CreateFilter(ctx, &mautrix.Filter{
			Room: &mautrix.RoomFilter{
				Timeline: &mautrix.FilterPart{Limit: 50},
				State:    &mautrix.FilterPart{LazyLoadMembers: false},
			},
			Presence: &mautrix.FilterPart{NotTypes: []event.Type{event.EphemeralEventPresence}},
		})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create the matrix sync filter: %w", err)
	}
	return string(resp.FilterID), m.store.setValue(ctx, "filter_id", string(resp.FilterID))
}

// sleepAfter reports a failure of the sync loop and waits before the next
// attempt: retry_after_ms when the homeserver asks to slow down, else a
// backoff from one second doubling to a minute (b).
func (m *Matrix) sleepAfter(ctx context.Context, err error, b *channelkit.Backoff) error {
	m.setErr(err)
	attempt, wait := b.Failures(), b.Next()
	if ra, ok := retryAfter(err); ok {
		wait = ra
		m.log.Warn("the Matrix homeserver asks to slow down", "retry_after", wait)
	} else if attempt == 0 || attempt%10 == 0 {
		m.log.Warn("matrix sync failed; retrying with backoff", "err", err, "wait", wait)
	}
	return b.Fail(ctx, wait)
}

// retryDelays space the retries of one call: 1 s doubling to a minute,
// jittered into the upper half.
var retryDelays = extension.Backoff{Base: channelkit.DefaultBackoffBase, Max: channelkit.DefaultBackoffMax}

// retryAfter returns how long an M_LIMIT_EXCEEDED answer asks to wait
// (retry_after_ms, or the Retry-After header; a second when it says
// nothing).
func retryAfter(err error) (time.Duration, bool) {
	var herr mautrix.HTTPError
	if !errors.As(err, &herr) || herr.RespError == nil || herr.RespError.ErrCode != mautrix.MLimitExceeded.ErrCode {
		return 0, false
	}
	if ms, ok := herr.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
		return min(time.Duration(ms)*time.Millisecond, 10*time.Minute), true
	}
	if herr.Response != nil {
		if s, err := strconv.Atoi(herr.Response.Header.Get("Retry-After")); err == nil && s > 0 {
			return min(time.Duration(s)*time.Second, 10*time.Minute), true
		}
	}
	return time.Second, true
}

// transient reports an error worth retrying: the network, a timeout, a
// 5xx answer.
func transient(err error) bool {
	var herr mautrix.HTTPError
	if errors.As(err, &herr) {
		if herr.Response != nil {
			return herr.Response.StatusCode >= 500
		}
		return herr.WrappedError != nil
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, context.DeadlineExceeded)
}

// retry runs call (each attempt bounded by callTimeout). Transient
// failures are retried with backoff (1 s doubling to a minute) for up to
// maxTransientWait of waiting; rate limits are waited out as the
// homeserver asks (retry_after_ms) as often as it asks, up to
// maxLimitedWait in all: a busy or failing homeserver delays a reply, it
// does not drop it. A call that sends an event repeats its transaction id,
// so a retry after a lost answer is not a second message. Once the channel
// stops (Run returned) a failed call is not tried again.
func (m *Matrix) retry(ctx context.Context, call func(ctx context.Context) error) error {
	var limitedFor, failingFor time.Duration
	for attempt := 1; ; {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := call(cctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return m.scrub(err)
		}
		wait, limited := retryAfter(err)
		switch {
		case limited && limitedFor+wait > maxLimitedWait:
			return fmt.Errorf("rate-limited for %s: %w", limitedFor, m.scrub(err))
		case limited:
			limitedFor += wait
			m.log.Debug("the Matrix homeserver asks to slow down", "retry_after", wait)
		case !transient(err):
			return m.scrub(err)
		default:
			wait = retryDelays.Delay(attempt - 1)
			if failingFor+wait > maxTransientWait {
				return fmt.Errorf("failing for %s (%d attempts): %w", failingFor, attempt, m.scrub(err))
			}
			failingFor += wait
			attempt++
			m.log.Debug("a Matrix homeserver call failed; retrying", "err", m.scrub(err), "wait", wait)
		}
		if serr := m.stopping.Sleep(ctx, m.opts.Sleep, wait); serr != nil {
			return errors.Join(m.scrub(err), serr)
		}
	}
}

// Stop waits for the typing indicators of open streams.
func (m *Matrix) Stop(context.Context) error {
	m.streams.Wait()
	return nil
}

// Destroy closes the crypto and state database.
func (m *Matrix) Destroy(context.Context) error {
	if m.db != nil {
		return m.db.Close()
	}
	return nil
}

// Tools offers matrix_send_file.
func (m *Matrix) Tools() []tool.Tool {
	return []tool.Tool{channelkit.SendFileTool(channelkit.SendFile{
		Channel: ChannelName,
		Description: "Send a file from the workspace to the user on Matrix (images as pictures, anything else as a file; " +
			"encrypted in encrypted rooms).",
		ThreadForm:  "matrix:<room id>",
		Workspace:   m.wsDir,
		MaxBytes:    maxUpload,
		CheckThread: func(th chat.ThreadID) error { _, err := threadRoom(th); return err },
		Ready: func() error {
			if !m.isReady() {
				return errors.New("matrix is not connected yet")
			}
			return nil
		},
		Upload: m.uploadFile,
	})}
}

// threadRoom returns the room id of a matrix thread.
func threadRoom(th chat.ThreadID) (id.RoomID, error) {
	if th.Channel() != ChannelName || !strings.HasPrefix(th.Target(), "!") || !strings.Contains(th.Target(), ":") {
		return "", fmt.Errorf("%q is not a matrix thread (matrix:<room id>, e.g. matrix:!abc:example.org)", th)
	}
	return id.RoomID(th.Target()), nil
}

// slogWriter passes mautrix's zerolog lines (JSON) to the extension's log.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Warn("mautrix", "line", strings.TrimSpace(string(p)))
	return len(p), nil
}

var (
	_ extension.Extension                = (*Matrix)(nil)
	_ extension.ServiceProvider          = (*Matrix)(nil)
	_ extension.HealthChecker            = (*Matrix)(nil)
	_ extension.StreamingChannelProvider = (*Matrix)(nil)
	_ extension.VoiceChannelProvider     = (*Matrix)(nil)
	_ extension.ToolProvider             = (*Matrix)(nil)
	_ extension.Stopper                  = (*Matrix)(nil)
	_ extension.Destroyer                = (*Matrix)(nil)
	_ extension.ConfigChecker            = (*Matrix)(nil)
	_ extension.Diagnoser                = (*Matrix)(nil)
	_ extension.SharedThreads            = (*Matrix)(nil)
)

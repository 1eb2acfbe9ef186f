package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
	"github.com/reverie-ai/reverie/tool"
)

// ID is the extension id; ChannelName the channel part of its threads.
const (
	ID          = "telegram"
	ChannelName = "telegram"
)

// maxUpdateAttempts: an update the router keeps refusing is skipped (and
// its sender told) after this many attempts.
const maxUpdateAttempts = 5

// retryDelays space the retries of one call and of a refused update: 1 s
// doubling to a minute, jittered into the upper half.
var retryDelays = extension.Backoff{Base: channelkit.DefaultBackoffBase, Max: channelkit.DefaultBackoffMax}

const (
	// maxTransientWait bounds the time one call waits between retries
	// after transient failures (the network, a timeout, a 5xx answer): a
	// Bot API outage of a minute or two delays a reply, it does not drop
	// it.
	maxTransientWait = 2 * time.Minute
	// maxLimitedWait bounds the time one call waits out rate limits (429).
	maxLimitedWait = 5 * time.Minute
)

func init() { extension.Register(Info(Options{})) }

// Options adjust the channel for tests; the zero value is production.
type Options struct {
	// Sleep waits d or until ctx ends (backoff, retry_after, the edit
	// rate). Nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// HTTPClient makes the Bot API calls (nil: a client without proxy
	// surprises and with the poll timeout in mind).
	HTTPClient *http.Client
	// PollTimeout is the long-poll timeout asked of getUpdates (default
	// DefaultPollTimeout).
	PollTimeout time.Duration
}

// Info is the channel's registration with opts (the built-in one uses the
// zero Options; tests register their own).
func Info(opts Options) extension.Info {
	info := channelkit.Info(ID, "Telegram channel (long polling, pairing codes, streaming by message edits)",
		Configured, func() extension.Extension { return New(opts) })
	info.NotConfigured = "the telegram: section has no token, so the channel is off (set telegram.token or REVERIE_TELEGRAM__TOKEN)"
	return info
}

// New returns an uninitialised channel.
func New(opts Options) *Telegram {
	if opts.Sleep == nil {
		opts.Sleep = extension.Sleep
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = DefaultPollTimeout
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: opts.PollTimeout + callTimeout}
	}
	return &Telegram{opts: opts}
}

// Telegram is the channel extension.
type Telegram struct {
	opts    Options
	cfg     Config
	host    extension.Host
	log     *slog.Logger
	api     *client
	store   *store
	allowed map[int64]bool // from the configuration
	wsDir   string         // <data>/workspace

	mu      sync.Mutex
	me      *models.User // the bot, from getMe
	lastErr error        // of the poller, for Health
	streams sync.WaitGroup

	// stopping ends retries when Run returns (the agent is stopping): a
	// reply being delivered gets the attempt it is in, not minutes of
	// waits that would hold up the shutdown.
	stopping channelkit.Stopping

	// notifyMu serialises notifyApproved: the poller and an approval from
	// another channel both call it, and two readers of the same unnotified
	// row would each send the notice.
	notifyMu sync.Mutex

	// floodTold: the owners were told the pairing table is full; reset
	// when a code is issued again (pair).
	floodTold bool // guarded by mu
}

// Init decodes the section, opens the channel's tables and checks the
// token with getMe: a token Telegram rejects is a configuration error; an
// unreachable Telegram is retried by Run.
func (t *Telegram) Init(ctx context.Context, host extension.Host) error {
	cfg, err := decodeConfig(host.DecodeConfig)
	if err != nil {
		return err
	}
	t.cfg = cfg
	token, err := t.cfg.Token.Resolve(host.DataDir())
	if err != nil {
		return fmt.Errorf("%w: telegram.token (%s): %w", extension.ErrInvalidConfig, t.cfg.Token.Source(), err)
	}
	// From here on the token is replaced in every log line, event and
	// stored record of the process (and scrubbed from the Bot API's errors
	// by the client itself).
	host.RegisterSecret(token)
	if !tokenPattern().MatchString(token) {
		return fmt.Errorf("%w: telegram.token (%s) does not look like a bot token (digits, a colon, then letters, digits, - and _)",
			extension.ErrInvalidConfig, t.cfg.Token.Source())
	}
	t.host, t.log = host, host.Logger()
	t.wsDir = filepath.Join(host.DataDir(), "workspace")
	t.allowed = map[int64]bool{}
	for _, id := range t.cfg.AllowedUsers {
		t.allowed[id] = true
	}
	if err := host.Migrate(ctx, component, migrationFiles, "migrations"); err != nil {
		return err
	}
	t.store = &store{db: host.DB(), now: host.Now, ttl: t.cfg.PairingTTL}
	t.api, err = newClient(t.cfg.APIURL, token, t.opts.HTTPClient, func(err error) {
		t.log.Warn("telegram client", "err", err)
	})
	if err != nil {
		return fmt.Errorf("telegram client: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	me, err := t.api.bot.GetMe(cctx)
	// Init starts no goroutine that outlives it: no idle connection either.
	t.opts.HTTPClient.CloseIdleConnections()
	if err != nil {
		err = t.api.scrub(err)
		if k, _ := classify(err); k == errUnauthorized {
			return fmt.Errorf("%w: telegram.token (%s): Telegram refused it (%v); check it with @BotFather",
				extension.ErrInvalidConfig, t.cfg.Token.Source(), err)
		}
		t.log.Warn("Telegram is not reachable now; the channel keeps trying", "err", err)
		t.setErr(err)
		return nil
	}
	t.setMe(me)
	return nil
}

func (t *Telegram) setMe(me *models.User) {
	t.mu.Lock()
	t.me = me
	t.mu.Unlock()
}

func (t *Telegram) bot() *models.User {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.me
}

func (t *Telegram) setErr(err error) {
	t.mu.Lock()
	t.lastErr = err
	t.mu.Unlock()
}

// Health reports the poller's last failure.
func (t *Telegram) Health(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastErr
}

// CheckConfig decodes and validates the section as Init does, without
// reading the token or calling Telegram (`reverie doctor`; its getMe check
// is Diagnose).
func (t *Telegram) CheckConfig(decode func(v any) error) error {
	_, err := decodeConfig(decode)
	return err
}

// decodeConfig decodes the section over the defaults and validates it.
func decodeConfig(decode func(v any) error) (Config, error) {
	cfg := DefaultConfig()
	if err := decode(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.check(); err != nil {
		return cfg, fmt.Errorf("%w: %w", extension.ErrInvalidConfig, err)
	}
	return cfg, nil
}

// ChannelName implements extension.ChannelProvider.
func (t *Telegram) ChannelName() string { return ChannelName }

// Run polls Telegram until ctx ends.
func (t *Telegram) Run(ctx context.Context) error {
	defer t.opts.HTTPClient.CloseIdleConnections()
	defer t.stopping.Stop()
	b := &channelkit.Backoff{Sleep: t.opts.Sleep}
	for t.bot() == nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		me, err := t.api.bot.GetMe(cctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			t.setMe(me)
			break
		}
		if t.sleepAfter(ctx, t.api.scrub(err), b) != nil {
			return nil
		}
	}
	b.Succeeded()
	t.setErr(nil)
	t.log.Info("telegram bot connected", "bot", "@"+t.bot().Username)
	t.setCommands(ctx)
	offset, err := t.store.offset(ctx)
	if err != nil {
		return err
	}
	var stuck int64 // the update the router refused last
	stuckTries := 0
	for {
		t.notifyApproved(ctx)
		ups, err := t.api.getUpdates(ctx, offset, t.opts.PollTimeout)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if t.sleepAfter(ctx, err, b) != nil {
				return nil
			}
			continue
		}
		if b.Succeeded() {
			t.log.Info("telegram polling works again")
		}
		t.setErr(nil)
		for _, u := range ups {
			if u.ID < offset {
				continue // already handled: the server repeated it
			}
			if err := t.handle(ctx, u); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if stuck != u.ID {
					stuck, stuckTries = u.ID, 0
				}
				stuckTries++
				if stuckTries < maxUpdateAttempts {
					t.log.Warn("could not hand a Telegram message to the router; retrying", "update", u.ID, "err", err)
					if t.opts.Sleep(ctx, retryDelays.Delay(stuckTries-1)) != nil {
						return nil
					}
					break // ask again from this update
				}
				t.log.Error("a Telegram message was refused repeatedly; skipped", "update", u.ID, "err", err)
				t.tellRefused(ctx, u, err)
			}
			offset = u.ID + 1
			if err := t.store.setOffset(ctx, offset); err != nil {
				t.log.Error("could not store the Telegram offset; a restart may see this message again", "err", err)
			}
		}
	}
}

// sleepAfter reports a poll failure and waits before the next attempt:
// retry_after when Telegram asks to slow down, else b's next wait.
func (t *Telegram) sleepAfter(ctx context.Context, err error, b *channelkit.Backoff) error {
	t.setErr(err)
	kind, retryAfter := classify(err)
	attempt, wait := b.Failures(), b.Next()
	switch kind {
	case errRateLimited:
		wait = retryAfter
		t.log.Warn("Telegram asks to slow down", "retry_after", wait)
	case errConflict:
		t.setErr(fmt.Errorf("another program is polling with this bot token, or a webhook is set (%w); "+
			"stop the other instance or delete the webhook — retrying", err))
		if attempt == 0 {
			t.log.Error("Telegram answered 409 Conflict: another program (a second Reverie?) is polling with this bot token, "+
				"or the bot has a webhook; stop it or delete the webhook. Retrying with backoff.", "err", err)
		}
	case errUnauthorized:
		t.log.Error("Telegram refuses the bot token (revoked?); retrying with backoff", "err", err)
	default:
		if attempt == 0 || attempt%10 == 0 {
			t.log.Warn("Telegram polling failed; retrying with backoff", "err", err, "wait", wait)
		}
	}
	return b.Fail(ctx, wait)
}

// setCommands registers the slash commands with Telegram (the menu).
func (t *Telegram) setCommands(ctx context.Context) {
	svc := api.ServicesFrom(t.host)
	if svc.Info == nil {
		return
	}
	info, err := svc.Info.Info(ctx)
	if err != nil {
		t.log.Warn("could not list the commands for Telegram", "err", err)
		return
	}
	var cmds []models.BotCommand
	for _, c := range info.Commands {
		desc := c.Help
		if len(desc) > 256 {
			desc = desc[:253] + "..."
		}
		if desc == "" {
			desc = c.Name
		}
		cmds = append(cmds, models.BotCommand{Command: c.Name, Description: desc})
	}
	if len(cmds) == 0 {
		return
	}
	err = t.retry(ctx, func(ctx context.Context) error {
		_, err := t.api.bot.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds})
		return err
	})
	if err != nil {
		t.log.Warn("could not register the commands with Telegram", "err", err)
	}
}

// isAllowed reports whether user may talk to the assistant.
func (t *Telegram) isAllowed(ctx context.Context, user int64) (bool, error) {
	if t.allowed[user] {
		return true, nil
	}
	return t.store.approved(ctx, user)
}

// SharedThread implements extension.SharedThreads: a group's thread (a
// negative chat id) is shared; the owner's private chat is the first of
// telegram.allowed_users (a private chat's id is its user's id).
func (t *Telegram) SharedThread(thread chat.ThreadID) (chat.ThreadID, bool) {
	id, err := threadChat(thread)
	if err != nil || id > 0 {
		return "", false
	}
	if len(t.cfg.AllowedUsers) == 0 {
		return "", true
	}
	return chat.NewThreadID(ChannelName, strconv.FormatInt(t.cfg.AllowedUsers[0], 10)), true
}

// IsOwner implements extension.Pairer: the owners are telegram.allowed_users
// (people let in by pairing are not).
func (t *Telegram) IsOwner(senderID string) bool {
	id, err := strconv.ParseInt(senderID, 10, 64)
	return err == nil && t.allowed[id]
}

// ApprovePairing lets in the person who was given code and tells them.
func (t *Telegram) ApprovePairing(ctx context.Context, code string) (extension.Paired, error) {
	p, err := t.store.approve(ctx, code)
	if err != nil {
		return p, err
	}
	t.log.Info("telegram pairing approved", "user", p.UserID, "name", p.Name)
	t.notifyApproved(ctx)
	return p, nil
}

// notifyApproved tells the people approved since the last time.
func (t *Telegram) notifyApproved(ctx context.Context) {
	t.notifyMu.Lock()
	defer t.notifyMu.Unlock()
	users, err := t.store.unnotified(ctx)
	if err != nil {
		t.log.Warn("could not read approvals", "err", err)
		return
	}
	for user, chatID := range users {
		if err := t.sendText(ctx, chatID, "You're in: the owner approved your pairing code. Write anything to talk to the assistant; /help lists the commands."); err != nil {
			t.log.Warn("could not tell an approved user", "user", user, "err", err)
			if k, _ := classify(err); k != errForbidden && k != errBadRequest {
				continue // try again later
			}
		}
		if err := t.store.markNotified(ctx, user); err != nil {
			t.log.Warn("could not record an approval notice", "user", user, "err", err)
		}
	}
}

// tellRefused tells the sender that a message could not be accepted.
func (t *Telegram) tellRefused(ctx context.Context, u *models.Update, err error) {
	if u.Message == nil {
		return
	}
	_ = t.sendText(ctx, u.Message.Chat.ID, "Sorry, your message could not be accepted ("+t.host.Redact(err.Error())+"). Please send it again.")
}

// Tools offers telegram_send_file.
func (t *Telegram) Tools() []tool.Tool {
	return []tool.Tool{channelkit.SendFileTool(channelkit.SendFile{
		Channel:     ChannelName,
		Description: "Send a file from the workspace to the user on Telegram (images as photos, anything else as a document).",
		ThreadForm:  "telegram:<chat id>",
		Workspace:   t.wsDir,
		MaxBytes:    maxUpload,
		CheckThread: func(th chat.ThreadID) error { _, err := threadChat(th); return err },
		Upload:      t.uploadFile,
	})}
}

// threadChat returns the chat id of a telegram thread.
func threadChat(th chat.ThreadID) (int64, error) {
	if th.Channel() != ChannelName {
		return 0, fmt.Errorf("%q is not a telegram thread", th)
	}
	id, err := strconv.ParseInt(th.Target(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a telegram thread (telegram:<chat id>)", th)
	}
	return id, nil
}

// retry runs call (each attempt bounded by callTimeout). Rate limits
// (429) are waited out as Telegram asks (retry_after), as often as it
// asks, up to maxLimitedWait in all; transient failures (the network, a
// timeout, a 5xx answer) are retried with backoff (1 s doubling to a
// minute) for up to maxTransientWait of waiting: a Bot API outage delays a
// reply, it does not drop it. Other errors (400, 403, …) are not retried,
// and once the channel stops (Run returned) a failed call is not tried
// again. The Bot API has no idempotency key for sends: a send whose
// answer was lost after Telegram took it (a timeout, a dropped
// connection) can show twice; a 5xx answer or a refused connection means
// it was not taken.
func (t *Telegram) retry(ctx context.Context, call func(ctx context.Context) error) error {
	var limitedFor, failingFor time.Duration
	for attempt := 1; ; {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := t.api.scrub(call(cctx))
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		kind, wait := classify(err)
		switch kind {
		case errRateLimited:
			if limitedFor+wait > maxLimitedWait {
				return fmt.Errorf("rate-limited for %s: %w", limitedFor, err)
			}
			limitedFor += wait
		case errTransient:
			wait = retryDelays.Delay(attempt - 1)
			if failingFor+wait > maxTransientWait {
				return fmt.Errorf("failing for %s (%d attempts): %w", failingFor, attempt, err)
			}
			failingFor += wait
			attempt++
			t.log.Debug("a Bot API call failed; retrying", "err", err, "wait", wait)
		default:
			return err
		}
		if serr := t.stopping.Sleep(ctx, t.opts.Sleep, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// senderName is how a Telegram user is named in logs and pairing lists.
func senderName(u *models.User) string {
	name := u.FirstName
	if u.LastName != "" {
		name += " " + u.LastName
	}
	if u.Username != "" {
		name += " (@" + u.Username + ")"
	}
	return name
}

var (
	_ extension.Extension                = (*Telegram)(nil)
	_ extension.Diagnoser                = (*Telegram)(nil)
	_ extension.ServiceProvider          = (*Telegram)(nil)
	_ extension.HealthChecker            = (*Telegram)(nil)
	_ extension.StreamingChannelProvider = (*Telegram)(nil)
	_ extension.VoiceChannelProvider     = (*Telegram)(nil)
	_ extension.Pairer                   = (*Telegram)(nil)
	_ extension.SharedThreads            = (*Telegram)(nil)
	_ extension.ToolProvider             = (*Telegram)(nil)
	_ extension.SetupProvider            = (*Telegram)(nil)
	_ extension.Stopper                  = (*Telegram)(nil)
	_ extension.ConfigChecker            = (*Telegram)(nil)
)

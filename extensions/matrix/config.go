package matrix

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
)

// Group modes (matrix.group_mode).
const (
	// GroupMention: in rooms with more than one other member, answer
	// allowed users who mention the bot or reply to it (default).
	GroupMention = "mention"
	// GroupAll: answer every message of allowed users in group rooms.
	GroupAll = "all"
	// GroupOff: ignore group rooms.
	GroupOff = "off"
)

// DefaultRecoveryKeyFile is where the cross-signing recovery key is written
// (relative to the data dir).
const DefaultRecoveryKeyFile = "secrets/matrix_recovery.key"

// Config is the matrix: section of config.yaml.
type Config struct {
	// Homeserver is the homeserver's client-server API URL
	// (https://matrix.org, https://matrix.example.org).
	Homeserver string `yaml:"homeserver"`
	// UserID is the bot account's full id (@reverie:example.org).
	UserID string `yaml:"user_id"`
	// Password logs the bot in once (a secret); the device and its access
	// token are kept in the data dir afterwards.
	Password extension.Secret `yaml:"password"`
	// AccessToken is an existing access token of the bot account (a
	// secret), used instead of a password.
	AccessToken extension.Secret `yaml:"access_token"`
	// DeviceName is the display name of the bot's device.
	DeviceName string `yaml:"device_name"`
	// AllowedUsers are the Matrix user ids the assistant answers and
	// whose invites it accepts; nobody else is heard.
	AllowedUsers channelkit.UserIDs[string] `yaml:"allowed_users"`
	// Encryption turns end-to-end encryption on (default): encrypted rooms
	// are read and answered encrypted, cross-signing is set up.
	Encryption bool `yaml:"encryption"`
	// RecoveryKeyFile is where the cross-signing recovery key is written
	// on first start (relative to the data dir, mode 0600).
	RecoveryKeyFile string `yaml:"recovery_key_file"`
	// GroupMode is mention, all or off.
	GroupMode string `yaml:"group_mode"`
	// Edits streams a reply by editing one message (m.replace); false
	// sends the reply once, complete.
	Edits bool `yaml:"edits"`
	// EditInterval is the least time between two edits of a streamed
	// reply.
	EditInterval time.Duration `yaml:"edit_interval"`
	// MaxFileBytes bounds a downloaded attachment (0 turns downloads off).
	MaxFileBytes int64 `yaml:"max_file_bytes"`
}

// DefaultConfig is the configuration without a matrix: section.
func DefaultConfig() Config {
	return Config{DeviceName: "Reverie", Encryption: true, RecoveryKeyFile: DefaultRecoveryKeyFile,
		GroupMode: GroupMention, Edits: true, EditInterval: 2 * time.Second, MaxFileBytes: 20 << 20}
}

// Configured reports whether the section asks for the channel: a
// homeserver, a user id and a credential are set (extension.Info.AutoEnable).
func Configured(decode func(v any) error) bool {
	cfg := DefaultConfig()
	if err := decode(&cfg); err != nil {
		return true // Init reports it
	}
	return cfg.Homeserver != "" && cfg.UserID != "" && (cfg.Password.IsSet() || cfg.AccessToken.IsSet())
}

// check validates the section; errors name the key.
func (c Config) check() error {
	if c.Homeserver == "" {
		return errors.New("matrix.homeserver is not set: give the homeserver's URL (https://matrix.org, or your own)")
	}
	u, err := url.Parse(c.Homeserver)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("matrix.homeserver %q: not an http(s) URL", c.Homeserver)
	}
	if _, _, err := id.UserID(c.UserID).Parse(); err != nil || !strings.HasPrefix(c.UserID, "@") {
		return fmt.Errorf("matrix.user_id %q: not a Matrix user id (@name:server)", c.UserID)
	}
	switch {
	case !c.Password.IsSet() && !c.AccessToken.IsSet():
		return errors.New("matrix.password or matrix.access_token must be set " +
			"(password: {env: MATRIX_PASSWORD}, or REVERIE_MATRIX__PASSWORD)")
	case c.Password.IsSet() && c.AccessToken.IsSet():
		return errors.New("matrix.password and matrix.access_token are both set: keep one")
	}
	switch c.GroupMode {
	case GroupMention, GroupAll, GroupOff:
	default:
		return fmt.Errorf("matrix.group_mode %q: must be %s, %s or %s", c.GroupMode, GroupMention, GroupAll, GroupOff)
	}
	if len(c.AllowedUsers) == 0 {
		return errors.New("matrix.allowed_users is empty: list the Matrix ids allowed to talk to the assistant (@you:example.org)")
	}
	for _, u := range c.AllowedUsers {
		if _, _, err := id.UserID(u).Parse(); err != nil || !strings.HasPrefix(u, "@") {
			return fmt.Errorf("matrix.allowed_users: %q is not a Matrix user id (@name:server)", u)
		}
	}
	if c.EditInterval < 500*time.Millisecond || c.EditInterval > time.Minute {
		return fmt.Errorf("matrix.edit_interval %s: must be between 500ms and 1m", c.EditInterval)
	}
	if c.MaxFileBytes < 0 {
		return fmt.Errorf("matrix.max_file_bytes %d: must not be negative (0 turns downloads off)", c.MaxFileBytes)
	}
	if c.Encryption && strings.TrimSpace(c.RecoveryKeyFile) == "" {
		return errors.New("matrix.recovery_key_file is empty: give a path (relative to the data dir) for the cross-signing recovery key")
	}
	return nil
}

// decodeConfig decodes the section over the defaults and validates it.
func decodeConfig(decode func(v any) error) (Config, error) {
	cfg := DefaultConfig()
	if err := decode(&cfg); err != nil {
		return cfg, err
	}
	cfg.Homeserver = strings.TrimRight(strings.TrimSpace(cfg.Homeserver), "/")
	if err := cfg.check(); err != nil {
		return cfg, fmt.Errorf("%w: %w", extension.ErrInvalidConfig, err)
	}
	return cfg, nil
}

// Diagnose is `reverie doctor`'s test of the section (extension.Diagnoser;
// decode is the section's decoder): the homeserver answers, and the
// credential the channel would use is accepted (the stored session's
// token, or the configured access token; a password is not tried, as that
// would create a device). It returns a line describing what was checked.
func (*Matrix) Diagnose(ctx context.Context, decode func(v any) error, dataDir string) (string, error) {
	cfg, err := decodeConfig(decode)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: callTimeout}
	defer hc.CloseIdleConnections()
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), "")
	if err != nil {
		return "", fmt.Errorf("matrix.homeserver %q: %w", cfg.Homeserver, err)
	}
	cli.Client = hc
	cli.DefaultHTTPRetries = 0
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := cli.Versions(ctx); err != nil {
		return "", fmt.Errorf("the homeserver at %s does not answer: %w", cfg.Homeserver, err)
	}
	token := ""
	what := ""
	if cfg.AccessToken.IsSet() {
		if token, err = cfg.AccessToken.Resolve(dataDir); err != nil {
			return "", fmt.Errorf("matrix.access_token (%s): %w", cfg.AccessToken.Source(), err)
		}
		what = "matrix.access_token (" + cfg.AccessToken.Source() + ")"
	} else {
		if _, err := cfg.Password.Resolve(dataDir); err != nil {
			return "", fmt.Errorf("matrix.password (%s): %w", cfg.Password.Source(), err)
		}
		s, err := loadSession(sessionPath(dataDir))
		if err != nil || s.UserID != cfg.UserID || s.Homeserver != cfg.Homeserver {
			return fmt.Sprintf("the homeserver %s answers; the bot logs in as %s at the next start", cfg.Homeserver, cfg.UserID), nil
		}
		token, what = s.AccessToken, "the stored session"
	}
	cli.AccessToken = token
	who, err := cli.Whoami(ctx)
	if err != nil {
		msg := err.Error()
		if token != "" {
			msg = strings.ReplaceAll(msg, token, extension.RedactedSecret)
		}
		if errors.Is(err, mautrix.MUnknownToken) {
			return "", fmt.Errorf("the homeserver refuses %s: %s", what, msg)
		}
		return "", fmt.Errorf("whoami at %s: %s", cfg.Homeserver, msg)
	}
	if string(who.UserID) != cfg.UserID {
		return "", fmt.Errorf("%s belongs to %s, not to matrix.user_id %s", what, who.UserID, cfg.UserID)
	}
	return fmt.Sprintf("logged in as %s (device %s) on %s", who.UserID, who.DeviceID, cfg.Homeserver), nil
}

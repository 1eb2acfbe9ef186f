package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
)

// Group modes (telegram.group_mode).
const (
	// GroupMention: in groups, answer allowed users who mention the bot,
	// reply to it or address a command to it (default).
	GroupMention = "mention"
	// GroupAll: answer every message of allowed users in groups.
	GroupAll = "all"
	// GroupOff: ignore groups.
	GroupOff = "off"
)

// DefaultAPIURL is Telegram's Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// Config is the telegram: section of config.yaml.
type Config struct {
	// Token is the bot token from @BotFather (a secret). Setting it turns
	// the channel on.
	Token extension.Secret `yaml:"token"`
	// APIURL is the Bot API server: Telegram's, a self-hosted one, or a
	// test server.
	APIURL string `yaml:"api_url"`
	// AllowedUsers are the numeric Telegram user ids let in without
	// pairing.
	AllowedUsers channelkit.UserIDs[int64] `yaml:"allowed_users"`
	// GroupMode is mention, all or off.
	GroupMode string `yaml:"group_mode"`
	// PairingTTL is how long a pairing code stays valid.
	PairingTTL time.Duration `yaml:"pairing_ttl"`
	// MaxFileBytes bounds a downloaded attachment (the Bot API serves at
	// most 20 MB).
	MaxFileBytes int64 `yaml:"max_file_bytes"`
}

// DefaultConfig is the configuration without a telegram: section.
func DefaultConfig() Config {
	return Config{APIURL: DefaultAPIURL, GroupMode: GroupMention, PairingTTL: time.Hour, MaxFileBytes: 20 << 20}
}

// Configured reports whether the section asks for the channel: a token is
// set (extension.Info.AutoEnable).
func Configured(decode func(v any) error) bool {
	cfg := DefaultConfig()
	if err := decode(&cfg); err != nil {
		return true // Init reports it
	}
	return cfg.Token.IsSet()
}

// tokenPattern is the shape of a bot token: "<bot id>:<secret>".
var tokenPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$`) })

// check validates the section; errors name the key.
func (c Config) check() error {
	if !c.Token.IsSet() {
		return errors.New("telegram.token is not set: create a bot with @BotFather and set its token " +
			"(token: {env: TELEGRAM_BOT_TOKEN}, or REVERIE_TELEGRAM__TOKEN)")
	}
	u, err := url.Parse(c.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("telegram.api_url %q: not an http(s) URL", c.APIURL)
	}
	switch c.GroupMode {
	case GroupMention, GroupAll, GroupOff:
	default:
		return fmt.Errorf("telegram.group_mode %q: must be %s, %s or %s", c.GroupMode, GroupMention, GroupAll, GroupOff)
	}
	if c.PairingTTL < time.Minute || c.PairingTTL > 7*24*time.Hour {
		return fmt.Errorf("telegram.pairing_ttl %s: must be between 1m and 168h", c.PairingTTL)
	}
	if c.MaxFileBytes < 0 {
		return fmt.Errorf("telegram.max_file_bytes %d: must not be negative (0 turns downloads off)", c.MaxFileBytes)
	}
	for _, id := range c.AllowedUsers {
		if id <= 0 {
			return fmt.Errorf("telegram.allowed_users: %d is not a user id (user ids are positive numbers)", id)
		}
	}
	return nil
}

// Diagnose is `reverie doctor`'s test of the section (extension.Diagnoser;
// decode is the section's decoder): the token is resolved and sent to
// getMe. It says which bot the token belongs to; a token Telegram refuses,
// or an unreachable server, is an error without the token in it.
func (*Telegram) Diagnose(ctx context.Context, decode func(v any) error, dataDir string) (string, error) {
	cfg, err := decodeConfig(decode)
	if err != nil {
		return "", err
	}
	token, err := cfg.Token.Resolve(dataDir)
	if err != nil {
		return "", fmt.Errorf("telegram.token (%s): %w", cfg.Token.Source(), err)
	}
	if !tokenPattern().MatchString(token) {
		return "", fmt.Errorf("telegram.token (%s) does not look like a bot token", cfg.Token.Source())
	}
	hc := &http.Client{Timeout: callTimeout}
	defer hc.CloseIdleConnections()
	c, err := newClient(cfg.APIURL, token, hc, func(error) {})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	me, err := c.bot.GetMe(ctx)
	if err != nil {
		err = c.scrub(err)
		if k, _ := classify(err); k == errUnauthorized {
			return "", fmt.Errorf("Telegram refuses the token (%s): %w; check it with @BotFather", cfg.Token.Source(), err)
		}
		return "", fmt.Errorf("Telegram at %s does not answer: %w", cfg.APIURL, err)
	}
	return "the bot token works (bot @" + me.Username + ", asked with getMe)", nil
}

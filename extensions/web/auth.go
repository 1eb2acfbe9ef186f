package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// Authentication modes (web.auth).
const (
	AuthToken = "token"
	AuthNone  = "none"
)

// TokenFile is where the generated token is kept, relative to the data dir.
const TokenFile = "secrets/web_token"

// SessionCookie is the name of the browser session cookie.
const SessionCookie = "reverie_session"

// sessionMaxAge is how long a session cookie lives.
const sessionMaxAge = 30 * 24 * time.Hour

// Secret is a credential in the web section (web.token), written like
// every secret in config.yaml: {env: NAME}, {file: path} or inline.
type Secret = extension.Secret

// readSecretFile reads the kept token file.
func readSecretFile(path string) (string, error) { return extension.ReadSecretFile(path) }

// minTokenLen is the shortest token accepted from the configuration.
const minTokenLen = 16

// loadToken returns the configured token, or the one kept in
// <dataDir>/secrets/web_token, generating and storing it (mode 0600) when
// there is none; created reports that it was generated now.
func loadToken(cfg Secret, dataDir string) (token string, created bool, err error) {
	if cfg.IsSet() {
		token, err := cfg.Resolve(dataDir)
		if err != nil {
			return "", false, fmt.Errorf("web.token: %w", err)
		}
		if len(token) < minTokenLen {
			return "", false, fmt.Errorf("web.token: shorter than %d characters", minTokenLen)
		}
		return token, false, nil
	}
	return loadTokenFile(filepath.Join(dataDir, TokenFile), "web token")
}

// loadTokenFile returns the token kept at path, generating and storing a
// random one (mode 0600) when there is none; created reports that it was
// generated now. what names the token in errors.
func loadTokenFile(path, what string) (token string, created bool, err error) {
	switch token, err := readSecretFile(path); {
	case err == nil && token != "":
		return token, false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("read the %s: %w", what, err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("generate the %s: %w", what, err)
	}
	token = hex.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("store the %s: %w", what, err)
	}
	if err := writeFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("store the %s: %w", what, err)
	}
	return token, true, nil
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// authenticator checks bearer tokens (in constant time) and session
// cookies. With web.auth: none every request passes, but the token is
// still known: the setup form and the sign-in need it.
type authenticator struct {
	none bool
	// tokenSum is a SHA-256 sum, so every comparison is between
	// equal-length values (no length leak).
	tokenSum [32]byte
	sessions *sessions
}

func newAuthenticator(token string, none bool, s *sessions) *authenticator {
	return &authenticator{none: none, tokenSum: sha256.Sum256([]byte(token)), sessions: s}
}

func (a *authenticator) tokenOK(presented string) bool {
	sum := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

// how a request was authenticated.
type authKind int

const (
	authFailed authKind = iota
	authBearer
	authCookie
	authOff // web.auth: none, and no valid credentials
	// authControl: a request over the control socket from a peer of the
	// agent's uid with the control token (control.go). It counts as the
	// token: the peer can read the data dir's secrets.
	authControl
)

// withToken reports whether the request proved it knows the token.
func (k authKind) withToken() bool { return k == authBearer || k == authCookie || k == authControl }

// check authenticates r. A present but wrong Authorization header fails
// even when a valid cookie is present (with web.auth: none it only does
// not count as the token).
func (a *authenticator) check(r *http.Request) authKind {
	fail := authFailed
	if a.none {
		fail = authOff
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && a.tokenOK(strings.TrimSpace(tok)) {
			return authBearer
		}
		return fail
	}
	if c, err := r.Cookie(SessionCookie); err == nil && a.sessions.valid(c.Value) {
		return authCookie
	}
	return fail
}

// presentsToken reports whether r carries a bearer token (right or wrong).
func presentsToken(r *http.Request) bool { return r.Header.Get("Authorization") != "" }

// publicHost is web.public_url's host:port, or "".
func publicHost(publicURL string) string {
	if publicURL == "" {
		return ""
	}
	u, err := url.Parse(publicURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// sessionCookie builds the cookie set by /login (value "" clears it).
func sessionCookie(r *http.Request, value string) *http.Cookie {
	c := &http.Cookie{
		Name:     SessionCookie,
		Value:    value,
		Path:     "/api/",
		MaxAge:   int(sessionMaxAge / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	}
	if value == "" {
		c.MaxAge = -1
	}
	return c
}

// isLoopback reports whether a listen address binds only loopback
// interfaces ("127.0.0.1:8420", "[::1]:0", "localhost:8420").
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package web

import (
	"crypto/hmac"
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
	path := filepath.Join(dataDir, TokenFile)
	switch token, err := readSecretFile(path); {
	case err == nil && token != "":
		return token, false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("read the web token: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("generate the web token: %w", err)
	}
	token = hex.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("store the web token: %w", err)
	}
	if err := writeFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("store the web token: %w", err)
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

// authenticator checks bearer tokens and session cookies in constant time.
type authenticator struct {
	none bool
	// tokenSum and cookieSum are SHA-256 sums, so every comparison is
	// between equal-length values (no length leak).
	tokenSum  [32]byte
	cookie    string // the session cookie's value
	cookieSum [32]byte
}

func newAuthenticator(token string, none bool) *authenticator {
	a := &authenticator{none: none}
	if none {
		return a
	}
	a.tokenSum = sha256.Sum256([]byte(token))
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("reverie web session v1"))
	a.cookie = hex.EncodeToString(mac.Sum(nil))
	a.cookieSum = sha256.Sum256([]byte(a.cookie))
	return a
}

func (a *authenticator) tokenOK(presented string) bool {
	sum := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

func (a *authenticator) cookieOK(presented string) bool {
	sum := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(sum[:], a.cookieSum[:]) == 1
}

// how a request was authenticated.
type authKind int

const (
	authFailed authKind = iota
	authBearer
	authCookie
	authOff
)

// check authenticates r. A present but wrong Authorization header fails
// even when a valid cookie is present.
func (a *authenticator) check(r *http.Request) authKind {
	if a.none {
		return authOff
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && a.tokenOK(strings.TrimSpace(tok)) {
			return authBearer
		}
		return authFailed
	}
	if c, err := r.Cookie(SessionCookie); err == nil && a.cookieOK(c.Value) {
		return authCookie
	}
	return authFailed
}

// sameOrigin reports whether r's Origin header, when present, names the host
// r was sent to, or publicHost (web.public_url's host, when a reverse proxy
// changes Host): cookie-authenticated writes must come from the page.
func sameOrigin(r *http.Request, publicHost string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || (publicHost != "" && strings.EqualFold(u.Host, publicHost))
}

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

// sessionCookie builds the cookie set by /login (maxAge < 0 clears it).
func (a *authenticator) sessionCookie(r *http.Request, clear bool) *http.Cookie {
	c := &http.Cookie{
		Name:     SessionCookie,
		Value:    a.cookie,
		Path:     "/api/",
		MaxAge:   int(sessionMaxAge / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	}
	if clear {
		c.Value, c.MaxAge = "", -1
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

package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/reverie-ai/reverie/extension"
)

// Timeouts of Bot API calls.
const (
	callTimeout     = 30 * time.Second
	downloadTimeout = 2 * time.Minute
	// DefaultPollTimeout is the long-poll timeout asked of getUpdates.
	DefaultPollTimeout = 50 * time.Second
)

// redacted replaces the token in every error text.
const redacted = extension.RedactedSecret

// client is the Bot API as the channel uses it: the go-telegram/bot client
// for every method, and getUpdates by hand — the library polls only in its
// own loop, which confirms updates to Telegram before they are handled and
// does not obey retry_after, so it cannot give the delivery guarantees of
// this package.
type client struct {
	bot     *bot.Bot
	http    *http.Client
	baseURL string // without a trailing slash
	token   string
}

func newClient(apiURL, token string, hc *http.Client, onError func(error)) (*client, error) {
	c := &client{http: hc, baseURL: strings.TrimRight(apiURL, "/"), token: token}
	b, err := bot.New(token,
		bot.WithServerURL(c.baseURL),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(DefaultPollTimeout, hc),
		bot.WithErrorsHandler(func(err error) { onError(c.scrub(err)) }),
		bot.WithDebugHandler(func(string, ...any) {}),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	)
	if err != nil {
		return nil, c.scrub(err)
	}
	c.bot = b
	return c, nil
}

// scrubbedError is an error whose text has the token replaced; errors.Is
// and errors.As still see the original.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with the token removed from its text (and from the URL
// of a *url.Error inside it).
func (c *client) scrub(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, c.token, redacted)
	}
	if c.token == "" || !strings.Contains(err.Error(), c.token) {
		if _, ok := err.(*scrubbedError); ok {
			return err
		}
		return &scrubbedError{msg: err.Error(), err: err}
	}
	return &scrubbedError{msg: strings.ReplaceAll(err.Error(), c.token, redacted), err: err}
}

// getUpdatesRequest is the body of getUpdates.
type getUpdatesRequest struct {
	Offset         int64    `json:"offset,omitempty"`
	Timeout        int      `json:"timeout"`
	AllowedUpdates []string `json:"allowed_updates"`
}

// apiResponse is the Bot API's envelope.
type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// getUpdates long-polls for the updates from offset on.
func (c *client) getUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]*models.Update, error) {
	body, err := json.Marshal(getUpdatesRequest{Offset: offset, Timeout: int(timeout / time.Second), AllowedUpdates: []string{"message"}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/bot"+c.token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, c.scrub(fmt.Errorf("getUpdates: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("getUpdates: %w", err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, c.scrub(fmt.Errorf("getUpdates: read the answer: %w", err))
	}
	var r apiResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("getUpdates: HTTP %d with an answer that is not the Bot API's JSON: %w", resp.StatusCode, &serverError{code: resp.StatusCode})
	}
	if !r.OK {
		return nil, c.scrub(responseError("getUpdates", r))
	}
	var ups []*models.Update
	if err := json.Unmarshal(r.Result, &ups); err != nil {
		return nil, fmt.Errorf("getUpdates: decode the updates: %w", err)
	}
	return ups, nil
}

// serverError is a Bot API answer that is neither success nor one of the
// errors the library names (5xx, a proxy's error page).
type serverError struct {
	code int
	desc string
}

func (e *serverError) Error() string {
	if e.desc == "" {
		return fmt.Sprintf("Bot API error %d", e.code)
	}
	return fmt.Sprintf("Bot API error %d: %s", e.code, e.desc)
}

// responseError turns an error envelope into the go-telegram/bot error
// types, so that one classifier serves both.
func responseError(method string, r apiResponse) error {
	switch r.ErrorCode {
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: fmt.Sprintf("%s, %s", bot.ErrorTooManyRequests, r.Description), RetryAfter: r.Parameters.RetryAfter}
	case http.StatusConflict:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorConflict, r.Description)
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorUnauthorized, r.Description)
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorNotFound, r.Description)
	case http.StatusForbidden:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorForbidden, r.Description)
	case http.StatusBadRequest:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorBadRequest, r.Description)
	}
	return fmt.Errorf("%s: %w", method, &serverError{code: r.ErrorCode, desc: r.Description})
}

// download fetches a file getFile described, up to limit bytes.
func (c *client) download(ctx context.Context, f *models.File, limit int64) ([]byte, error) {
	if f.FilePath == "" {
		return nil, errors.New("download: Telegram gave no file path")
	}
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("download: %w", err))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("download: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.scrub(fmt.Errorf("download: %w", err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("download: larger than %d bytes", limit)
	}
	return data, nil
}

// errKind classifies a Bot API error for the retry decisions.
type errKind int

const (
	errOther        errKind = iota // do not retry
	errRateLimited                 // 429: wait retry_after
	errConflict                    // 409: another poller or a webhook
	errUnauthorized                // 401/404: the token is wrong or revoked
	errBadRequest                  // 400
	errForbidden                   // 403: blocked by the user, kicked from the group
	errTransient                   // network, timeouts, 5xx: retry with backoff
)

// classify says what kind of failure err is and, for 429, how long to wait.
func classify(err error) (errKind, time.Duration) {
	var tm *bot.TooManyRequestsError
	var se *serverError
	var ue *url.Error
	switch {
	case err == nil:
		return errOther, 0
	case errors.As(err, &tm):
		wait := time.Duration(tm.RetryAfter) * time.Second
		if wait <= 0 {
			wait = time.Second
		}
		return errRateLimited, wait
	case errors.Is(err, bot.ErrorConflict):
		return errConflict, 0
	case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		return errUnauthorized, 0
	case errors.Is(err, bot.ErrorBadRequest):
		return errBadRequest, 0
	case errors.Is(err, bot.ErrorForbidden):
		return errForbidden, 0
	case errors.As(err, &se), errors.As(err, &ue), errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF):
		return errTransient, 0
	case strings.Contains(err.Error(), "error response from telegram"), strings.Contains(err.Error(), "error decode response body"):
		// The library's text for 5xx answers and for non-JSON bodies.
		return errTransient, 0
	}
	return errOther, 0
}

// isParseError reports a 400 about the message's formatting.
func isParseError(err error) bool {
	k, _ := classify(err)
	return k == errBadRequest && strings.Contains(strings.ToLower(err.Error()), "can't parse entities")
}

// isNotModified reports an edit that changed nothing.
func isNotModified(err error) bool {
	k, _ := classify(err)
	return k == errBadRequest && strings.Contains(err.Error(), "message is not modified")
}

// Package anthropic is the model provider for the Anthropic messages API,
// built on the official anthropic-sdk-go.
//
// Mapping notes: the system prompt (and any system-role messages) goes in
// the system field; tool results are user-role tool_result blocks placed
// before any text of the same turn; consecutive messages of the same role
// are merged, as the API requires alternating roles.
//
// Structured output (llm.Request.ResponseFormat) uses a forced tool: the
// schema becomes the input schema of an extra tool named after the format
// and tool_choice forces it (or, when the request also offers other tools
// and allows their use, requires some tool). The forced tool's input is
// returned as the reply's text, streamed as text deltas, so callers see the
// same shape as OpenAI's response_format. This works with every Claude
// model, unlike the newer native output formats.
//
// Client is safe for concurrent use. Retries, timeouts and error
// classification follow package providers: the SDK's own retries are
// disabled so every provider behaves the same.
package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// DefaultBaseURL is Anthropic's API (the SDK appends /v1/…).
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens caps replies when neither the request nor the options do;
// the API requires a cap.
const DefaultMaxTokens = 4096

// Options configure a Client.
type Options struct {
	// Name names the backend in errors and logs (default "anthropic").
	Name string
	// BaseURL is the API root without /v1 (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// Model is the model to call unless a request names another. Required.
	Model string
	// MaxTokens caps replies when a request does not (default
	// DefaultMaxTokens).
	MaxTokens int
	// Temperature applies when a request sets none; nil is the API default.
	Temperature *float64
	// ThinkingBudget, when positive, turns on extended thinking with this
	// many tokens for reasoning (the API's minimum is 1024). The reasoning
	// streams as llm.EventThinkingDelta and is kept as llm.Thinking parts;
	// the signed blocks of an assistant message that called tools are sent
	// back with it, as the API requires. A request that forces a tool
	// (structured output, ToolChoiceRequired) is sent without thinking,
	// which the API does not allow together.
	ThinkingBudget int
	// Timeouts bound each call; zero fields take the defaults.
	Timeouts providers.Timeouts
	// MaxRetries: 0 is providers.DefaultMaxRetries, negative disables.
	MaxRetries int
	// HTTPClient replaces the client built from Timeouts.
	HTTPClient *http.Client
	// ExtraHeaders are added to every request (anthropic-beta…).
	ExtraHeaders map[string]string
	// Clock and Jitter drive backoff and timeouts; nil for the real ones.
	Clock  providers.Clock
	Jitter func() float64
}

// Client generates replies through the messages API.
type Client struct {
	o      Options
	sdk    sdk.Client
	policy providers.Policy
}

// New returns a client for o. It checks the options but does not contact
// the server (see Ping).
func New(o Options) (*Client, error) {
	if o.Name == "" {
		o.Name = "anthropic"
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("anthropic backend %s: base URL %q is not an absolute URL", o.Name, o.BaseURL)
	}
	if o.Model == "" {
		return nil, fmt.Errorf("anthropic backend %s: no model configured", o.Name)
	}
	switch {
	case o.MaxTokens < 0:
		return nil, fmt.Errorf("anthropic backend %s: negative max tokens %d", o.Name, o.MaxTokens)
	case o.MaxTokens == 0:
		o.MaxTokens = DefaultMaxTokens
	}
	if o.ThinkingBudget < 0 {
		return nil, fmt.Errorf("anthropic backend %s: negative thinking budget %d", o.Name, o.ThinkingBudget)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = providers.NewHTTPClient(o.Timeouts)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(strings.TrimRight(o.BaseURL, "/") + "/"),
		option.WithAPIKey(o.APIKey),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	}
	for k, v := range o.ExtraHeaders {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Client{
		o:   o,
		sdk: sdk.NewClient(opts...),
		policy: providers.Policy{
			Provider: o.Name, Timeouts: o.Timeouts, MaxRetries: o.MaxRetries, Clock: o.Clock, Jitter: o.Jitter,
		},
	}, nil
}

// Name is the backend's configured name.
func (c *Client) Name() string { return c.o.Name }

// Model is the configured model.
func (c *Client) Model() string { return c.o.Model }

// Generate sends req and returns the reply. With a non-nil stream it streams
// (text and tool-call deltas, usage, done) and still returns the complete
// reply. Errors are *providers.Error; see package providers for the
// classification and retry rules.
func (c *Client) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = c.o.Model
	}
	params, structured, err := c.params(req, model)
	if err != nil {
		return llm.Response{}, &providers.Error{Provider: c.o.Name, Model: model, Err: err}
	}
	var resp llm.Response
	err = c.policy.Run(ctx, model, stream, func(ctx context.Context, a *providers.Attempt) error {
		var err error
		if stream == nil {
			var msg *sdk.Message
			msg, err = c.sdk.Messages.New(ctx, params, option.WithMiddleware(a.Middleware))
			if err == nil {
				resp, err = fromMessage(msg, structured)
			}
		} else {
			resp, err = c.stream(ctx, a, params, structured)
		}
		return err
	})
	if err != nil {
		return llm.Response{}, err
	}
	return resp, nil
}

// pingTimeouts bound a health check.
var pingTimeouts = providers.Timeouts{Connect: 5 * time.Second, FirstByte: 10 * time.Second, Idle: 10 * time.Second, Total: 20 * time.Second}

// Ping checks that the API answers and accepts the key by listing one
// model (Anthropic's model list needs the key: the smallest authenticated
// call, and free) and says so. It does not retry.
func (c *Client) Ping(ctx context.Context) (string, error) {
	p := c.policy
	p.MaxRetries = -1
	p.Timeouts = pingTimeouts
	return "the model list with the API key", p.Run(ctx, c.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
		_, err := c.sdk.Models.List(ctx, sdk.ModelListParams{Limit: sdk.Int(1)}, option.WithMiddleware(a.Middleware))
		return err
	})
}

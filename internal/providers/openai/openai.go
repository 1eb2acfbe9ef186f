// Package openai is the model provider for the OpenAI chat-completions API
// and every server compatible with it (OpenRouter, vLLM, llama.cpp, LM
// Studio, Ollama's /v1), built on the official openai-go SDK. It also
// provides an Embedder over the embeddings API.
//
// Client and Embedder are safe for concurrent use. Retries, timeouts and
// error classification follow package providers: the SDK's own retries are
// disabled so every provider behaves the same.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Values of Options.MaxTokensField.
const (
	FieldMaxTokens           = "max_tokens"
	FieldMaxCompletionTokens = "max_completion_tokens"
)

// DefaultBatchSize is how many texts the Embedder sends per request.
const DefaultBatchSize = 64

// Options configure a Client or an Embedder.
type Options struct {
	// Name names the backend in errors and logs (default "openai").
	Name string
	// BaseURL is the API root including /v1 (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// Model is the model to call unless a request names another. Required.
	Model string
	// MaxTokens caps replies when a request does not; 0 leaves it to the
	// server.
	MaxTokens int
	// MaxTokensField is the request field carrying the cap: "max_tokens"
	// (understood by compatible servers; the default for any BaseURL that is
	// not api.openai.com) or "max_completion_tokens" (OpenAI's current name;
	// the default for api.openai.com).
	MaxTokensField string
	// Temperature applies when a request sets none; nil is the server's
	// default.
	Temperature *float64
	// Timeouts bound each call; zero fields take the defaults.
	Timeouts providers.Timeouts
	// MaxRetries: 0 is providers.DefaultMaxRetries, negative disables.
	MaxRetries int
	// HTTPClient replaces the client built from Timeouts.
	HTTPClient *http.Client
	// ExtraHeaders are added to every request (OpenRouter's HTTP-Referer…).
	ExtraHeaders map[string]string
	// Clock and Jitter drive backoff and timeouts; nil for the real ones.
	Clock  providers.Clock
	Jitter func() float64

	// Dimensions asks the Embedder for vectors of this size (0: the model's).
	Dimensions int
	// BatchSize is how many texts the Embedder sends per request (default
	// DefaultBatchSize).
	BatchSize int
}

func (o Options) normalize() (Options, error) {
	if o.Name == "" {
		o.Name = "openai"
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return o, fmt.Errorf("openai backend %s: base URL %q is not an absolute URL", o.Name, o.BaseURL)
	}
	if o.Model == "" {
		return o, fmt.Errorf("openai backend %s: no model configured", o.Name)
	}
	switch o.MaxTokensField {
	case "":
		o.MaxTokensField = FieldMaxTokens
		if strings.EqualFold(u.Hostname(), "api.openai.com") {
			o.MaxTokensField = FieldMaxCompletionTokens
		}
	case FieldMaxTokens, FieldMaxCompletionTokens:
	default:
		return o, fmt.Errorf("openai backend %s: max tokens field %q is neither %q nor %q",
			o.Name, o.MaxTokensField, FieldMaxTokens, FieldMaxCompletionTokens)
	}
	if o.MaxTokens < 0 {
		return o, fmt.Errorf("openai backend %s: negative max tokens %d", o.Name, o.MaxTokens)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.HTTPClient == nil {
		o.HTTPClient = providers.NewHTTPClient(o.Timeouts)
	}
	return o, nil
}

func (o Options) policy() providers.Policy {
	return providers.Policy{
		Provider: o.Name, Timeouts: o.Timeouts, MaxRetries: o.MaxRetries, Clock: o.Clock, Jitter: o.Jitter,
	}
}

// sdkOptions are the request options of every call. The services are
// built one by one (not through sdk.NewClient, which references every
// service of the API and would link them all into the binary).
func (o Options) sdkOptions() []option.RequestOption {
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimRight(o.BaseURL, "/") + "/"),
		option.WithAPIKey(o.APIKey),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	}
	for k, v := range o.ExtraHeaders {
		opts = append(opts, option.WithHeader(k, v))
	}
	return opts
}

// services are the parts of the API Reverie uses.
type services struct {
	chat   sdk.ChatCompletionService
	models sdk.ModelService
	client sdk.Client // its Options only: the generic call streaming posts with
}

// Client generates replies through the chat-completions API.
type Client struct {
	o      Options
	sdk    services
	policy providers.Policy
	tools  toolCache
}

// New returns a client for o. It checks the options but does not contact
// the server (see Ping).
func New(o Options) (*Client, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	opts := o.sdkOptions()
	return &Client{o: o, sdk: services{chat: sdk.NewChatCompletionService(opts...), models: sdk.NewModelService(opts...), client: sdk.Client{Options: opts}},
		policy: o.policy()}, nil
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
	params, err := c.params(req, model)
	if err != nil {
		return llm.Response{}, &providers.Error{Provider: c.o.Name, Model: model, Err: err}
	}
	var resp llm.Response
	err = c.policy.Run(ctx, model, stream, func(ctx context.Context, a *providers.Attempt) error {
		var err error
		if stream == nil {
			resp, err = c.complete(ctx, a, params)
		} else {
			resp, err = c.stream(ctx, a, params)
		}
		return err
	})
	if err != nil {
		return llm.Response{}, err
	}
	return resp, nil
}

func (c *Client) complete(ctx context.Context, a *providers.Attempt, r request) (llm.Response, error) {
	body, err := r.body()
	if err != nil {
		return llm.Response{}, providers.BadRequest(err, "encode the request")
	}
	// The body replaces the (empty) parameters' encoding.
	cc, err := c.sdk.chat.New(ctx, sdk.ChatCompletionNewParams{}, option.WithRequestBody("application/json", body), option.WithMiddleware(a.Middleware))
	if err != nil {
		return llm.Response{}, err
	}
	return fromCompletion(cc)
}

// pingTimeouts bound a health check.
var pingTimeouts = providers.Timeouts{Connect: 5 * time.Second, FirstByte: 10 * time.Second, Idle: 10 * time.Second, Total: 20 * time.Second}

// Ping checks that the server answers and accepts the credentials, and
// says what it checked. With an API key it asks for a one-token completion
// of the model: the smallest call every OpenAI-compatible server
// authenticates (many list their models to anyone, so a listing proves
// nothing about the key), and it checks the model name too. Without a key
// (a local server) it lists the models, and asks for the completion when
// the server has no /models endpoint. It does not retry.
func (c *Client) Ping(ctx context.Context) (string, error) {
	p := c.policy
	p.MaxRetries = -1
	p.Timeouts = pingTimeouts
	completion := func(why string) (string, error) {
		probe := llm.Request{Messages: []llm.Message{llm.UserText("ping")}, MaxTokens: 1}
		params, perr := c.params(probe, c.o.Model)
		what := "a 1-token completion of " + c.o.Model + " " + why
		if perr != nil {
			return what, &providers.Error{Provider: c.o.Name, Model: c.o.Model, Err: perr}
		}
		return what, p.Run(ctx, c.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
			_, err := c.complete(ctx, a, params)
			return err
		})
	}
	if c.o.APIKey != "" {
		return completion("with the API key")
	}
	err := p.Run(ctx, c.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
		_, err := c.sdk.models.List(ctx, option.WithMiddleware(a.Middleware))
		return err
	})
	if err == nil || !errors.Is(err, providers.ErrNotFound) {
		return "the model list (no API key is set)", err
	}
	return completion("(no API key is set; the server has no model list)")
}

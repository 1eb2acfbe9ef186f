// Package providers holds what the model providers (openai, anthropic) share:
// the error vocabulary the model router acts on, timeouts, and one retry and
// watchdog loop so every provider behaves identically on the wire.
//
// # Errors
//
// Every error a provider returns from Generate, Ping or Embed is a *Error
// naming the provider and model. errors.Is classifies it with one of the
// sentinels:
//
//   - ErrUnavailable: connection refused or reset, DNS failure, a timeout
//     (connect, first byte, idle gap between stream chunks, total), HTTP 408,
//     425, 429 and 5xx (529 included) once retries are exhausted, and error
//     events inside a stream. The model router falls back to the next backend
//     only on this.
//   - ErrAuth: HTTP 401 and 403. Never retried.
//   - ErrNotFound: HTTP 404 (unknown model or endpoint). Never retried.
//   - ErrBadRequest: HTTP 400, 413, 422 and other 4xx (context too long,
//     invalid schema), or a request that could not be built. Never retried.
//   - ErrBadResponse: a body that is not the expected JSON, no choices, a
//     stream cut before its terminal event. Never retried.
//
// When the caller's context ends the error wraps ctx.Err() (and carries no
// sentinel), so errors.Is(err, context.Canceled) holds and the router does
// not fall back.
//
// # Retries and streaming
//
// Policy.Run retries ErrUnavailable failures up to MaxRetries times with
// exponential backoff and jitter, waiting exactly the server's Retry-After
// (seconds, HTTP date or retry-after-ms; capped) when one is given. A request
// is never retried once a stream event has been handed to the caller's
// llm.StreamFunc, so callers never see duplicate deltas.
//
// # Concurrency
//
// Policy is an immutable value; Run may be called from many goroutines at
// once. Each Run owns its timers and cancels them before returning; no
// goroutine outlives Run.
package providers

// Package kernel loads Reverie's extensions and drives their lifecycle.
//
// # Selection and order
//
// New takes the registered extensions (extension.Registered, or
// Options.Registry), keeps those the configuration enables
// (Config.ExtensionEnabled(id, !info.Disabled)), creates one instance of each
// and orders them so that every extension comes after the extensions it
// depends on (Info.DependsOn). Ties are broken by id, so the order is
// deterministic. A dependency on an id that is not registered, or is
// registered but disabled, and a dependency cycle are configuration errors:
// New fails naming the ids involved, and nothing is initialised.
//
// # Lifecycle
//
//	New → Init → Start → Run (services) → Shutdown (Stop, then Destroy)
//
// Init and Start walk the extensions in dependency order; Stop and Destroy
// walk them in the reverse order. Ready tells every ReadyListener, once, that
// the agent takes messages. Capabilities (tools, channels, agents, jobs,
// context providers, setup providers) are detected by type assertion in one
// place after Init, and again after Start so that an extension that failed to
// start contributes nothing; the typed accessors (Tools, Channels, …) read
// that index.
//
// # Isolation
//
// An extension whose constructor, Init or Start fails — by returning an error
// or by panicking (the panic is recovered and logged with its stack) — is
// recorded as failed; every extension that depends on it, directly or
// transitively, is recorded as skipped with the reason, and the others carry
// on. Init and Start return an error only for kernel-level failures (a
// cancelled context or a call out of order), an Init error Options.Fatal
// selects (configuration errors), and the failure of an essential extension
// (*EssentialError): one Options.Essential names (the app: configured
// explicitly) or the only enabled channel. CheckConfig checks every
// extension.ConfigChecker's configuration without initialising anything
// (`reverie doctor`). A service (ServiceProvider.Run)
// that returns an error or panics is logged and marked failed; it does not
// cancel the other services. Duplicate tool, channel and agent names are
// logged as errors and the later provider's entry is dropped.
//
// Stop is called for every extension whose Start was attempted (also when it
// failed), Destroy for every extension whose Init succeeded; an extension
// whose Init failed must release what it acquired before returning.
//
// # Concurrency
//
// Init, Start and Shutdown are called by one owner, in that order. Run blocks
// until its context is cancelled and every service has returned; it may run
// concurrently with Ready, Health, Status and the capability accessors, which
// are safe for concurrent use at any time. Shutdown cancels a Run still in
// progress and waits for it before stopping anything, so Stop is never called
// while the extension's service is running. Shutdown and Health bound every
// call they make by a context: a Stop, Destroy or health check that does not
// return in time is abandoned and reported.
//
// # What an extension sees
//
// Each extension gets its own extension.Host: a logger tagged ext=<id>, the
// data dir, DecodeConfig bound to its own configuration section, the shared
// database, the bus with subscriber names namespaced as "<id>/<name>", the
// router's Receive (ErrNoRouter when the kernel has none) and the clock.
// Beside extension.Host, a host has Console (the terminal, for what must
// not reach the log), APIServices (api.Provider) and WasReceived (whether the
// router accepted a message before), which extensions find by a type
// assertion.
package kernel

// Package apptest runs the whole Reverie agent in one process for tests: the
// real composition root (internal/app) on a fresh data dir with real SQLite,
// a fake OpenAI-compatible model server speaking the real wire format
// (llm/llmtest) reached through the real provider SDK, and a recording test
// channel registered as an extension. Tests drive it with messages in and
// assert on replies and side effects: files, rows, events.
package apptest

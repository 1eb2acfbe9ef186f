package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/llm/llmtest"
)

// doctor checks the API key with a call the server authenticates (a
// 1-token completion), not the model list some servers give anyone, and
// says what it checked.
func TestDoctorChecksTheAPIKey(t *testing.T) {
	model := llmtest.NewOpenAIServer(t) // lists its models to anyone
	dir := filepath.Join(t.TempDir(), "data")
	env := chatEnv(t, model)
	if code, out, errs := runCLI(t, env, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s%s", code, out, errs)
	}
	model.Enqueue(llmtest.ServerReply{Text: "p", StopReason: "length"})
	code, out, errs := runCLI(t, env, "doctor", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "answers a 1-token completion of gpt-test with the API key") {
		t.Fatalf("doctor with a good key: exit %d\n%s%s", code, out, errs)
	}
	model.Enqueue(llmtest.ServerReply{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided"})
	code, out, _ = runCLI(t, env, "doctor", "--data", dir)
	if code != ExitFailure || !strings.Contains(out, "[FAIL] model") || !strings.Contains(out, "1-token completion of gpt-test with the API key failed") {
		t.Fatalf("doctor with a wrong key: exit %d\n%s", code, out)
	}
}

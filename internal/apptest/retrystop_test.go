package apptest

import (
	"testing"
	"time"
)

// stopEndsRetries waits until the channel is blocked waiting to send a reply
// again (blocked receives), then stops the app and checks the stop returns
// without waiting out the retries: a shutdown is not held for minutes by a
// failing chat server. Each wait is bounded by timeout.
func stopEndsRetries(t *testing.T, blocked <-chan struct{}, stop func() error, timeout time.Duration) {
	t.Helper()
	select {
	case <-blocked:
	case <-time.After(timeout):
		t.Fatal("the channel never waited to send the reply again")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("stop: %v", err)
		}
	case <-time.After(timeout):
		t.Fatalf("the stop still waited after %s for the reply's retries", timeout)
	}
}

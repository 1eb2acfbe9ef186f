package llm

import (
	"testing"
	"time"
)

func TestWaitWords(t *testing.T) {
	for _, c := range []struct {
		name string
		w    Wait
		want string
	}{
		{"rate limited", Wait{Reason: WaitRateLimited, Delay: 30 * time.Second}, "Rate limited by the provider, retrying in 30 s"},
		{"part of a second rounds up", Wait{Reason: WaitRateLimited, Delay: 500 * time.Millisecond}, "Rate limited by the provider, retrying in 1 s"},
		{"minutes", Wait{Reason: WaitRateLimited, Delay: 5 * time.Minute}, "Rate limited by the provider, retrying in 5 min"},
		{"unavailable", Wait{Reason: WaitUnavailable, Delay: 2 * time.Second}, "The model provider did not answer, retrying in 2 s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.w.Words(); got != c.want {
				t.Errorf("Words() = %q, want %q", got, c.want)
			}
		})
	}
}

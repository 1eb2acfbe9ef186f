package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

func TestToolsApproval(t *testing.T) {
	defaults := map[string]string{"send_to_channel": "new_destinations", "set_reminder": "new_destinations"}
	with := func(m map[string]string) map[string]string {
		out := maps.Clone(defaults)
		maps.Copy(out, m)
		return out
	}
	tests := []struct {
		name    string
		yaml    string
		env     []string
		want    map[string]string
		timeout time.Duration
		key     string
		message string
	}{
		{name: "defaults", want: defaults, timeout: 10 * time.Minute},
		{name: "added to the defaults, same tool replaced",
			yaml:    "tools:\n  approval:\n    execute_shell: always\n    send_to_channel: never\n  approval_timeout: 2m\n",
			want:    with(map[string]string{"send_to_channel": "never", "execute_shell": "always"}),
			timeout: 2 * time.Minute},
		{name: "older policy names still load",
			yaml:    "tools:\n  approval:\n    fetch_url: new_hosts_after_private\n    send_to_channel: other_channels\n    execute_shell: network\n    kv_set: new_hosts\n",
			want:    with(map[string]string{"fetch_url": "new_hosts_after_private", "send_to_channel": "other_channels", "execute_shell": "network", "kv_set": "new_hosts"}),
			timeout: 10 * time.Minute},
		{name: "unknown policy", yaml: "tools:\n  approval:\n    fetch_url: sometimes\n", key: "tools.approval.fetch_url", message: "untrusted"},
		{name: "zero timeout", yaml: "tools:\n  approval_timeout: 0s\n", key: "tools.approval_timeout", message: "positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tc.yaml), tc.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if tc.message != "" {
				var cerr *Error
				if !errors.As(err, &cerr) || cerr.Key != tc.key || !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("Validate() = %v, want key %q and %q", err, tc.key, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.Tools.Approval, tc.want) || c.Tools.ApprovalTimeout != tc.timeout {
				t.Errorf("approval = %v, %s; want %v, %s", c.Tools.Approval, c.Tools.ApprovalTimeout, tc.want, tc.timeout)
			}
		})
	}
}

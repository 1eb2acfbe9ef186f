package channelkit

import (
	"fmt"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestUserIDs(t *testing.T) {
	type numeric struct {
		IDs UserIDs[int64] `yaml:"allowed_users"`
	}
	type named struct {
		IDs UserIDs[string] `yaml:"allowed_users"`
	}
	for _, tc := range []struct {
		name string
		yaml string
		into any
		want string // fmt of the ids; "" with bad
		bad  bool
	}{
		{"numeric list", "allowed_users: [123, 456]", &numeric{}, "[123 456]", false},
		{"one number", "allowed_users: 42", &numeric{}, "[42]", false},
		{"comma-separated numbers", `allowed_users: "123, 456,789"`, &numeric{}, "[123 456 789]", false},
		{"empty string", `allowed_users: ""`, &numeric{}, "[]", false},
		{"not a number", `allowed_users: "12,abc"`, &numeric{}, "", true},
		{"a map", "allowed_users: {a: 1}", &numeric{}, "", true},
		{"string list trimmed", `allowed_users: [" @a:x.org ", "", "@b:x.org"]`, &named{}, "[@a:x.org @b:x.org]", false},
		{"comma-separated strings", `allowed_users: "@a:x.org, @b:x.org"`, &named{}, "[@a:x.org @b:x.org]", false},
		{"one string", `allowed_users: "@a:x.org"`, &named{}, "[@a:x.org]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := yaml.UnmarshalWithOptions([]byte(tc.yaml), tc.into, yaml.Strict())
			if (err != nil) != tc.bad {
				t.Fatalf("err = %v, want error %v", err, tc.bad)
			}
			if tc.bad {
				return
			}
			var got string
			switch v := tc.into.(type) {
			case *numeric:
				got = fmt.Sprint([]int64(v.IDs))
			case *named:
				got = fmt.Sprint([]string(v.IDs))
			}
			if got != tc.want {
				t.Errorf("ids = %s, want %s", got, tc.want)
			}
		})
	}
}

package channelkit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// UserIDs is a channel's allowed_users: numeric ids (Telegram) or string
// ids (Matrix's @name:server), written as a YAML list, a single id, or a
// comma-separated string (the form of REVERIE_<CHANNEL>__ALLOWED_USERS).
// String ids are trimmed and empty ones dropped; checking that each id is
// well formed is the channel's (its config check names the key).
type UserIDs[T int64 | string] []T

// UnmarshalYAML accepts a list, a comma-separated string or a single id.
func (u *UserIDs[T]) UnmarshalYAML(unmarshal func(any) error) error {
	var list []T
	if err := unmarshal(&list); err == nil {
		*u = nil
		for _, v := range list {
			if s, ok := any(v).(string); ok {
				if s = strings.TrimSpace(s); s == "" {
					continue
				}
				v = any(s).(T)
			}
			*u = append(*u, v)
		}
		return nil
	}
	var text string
	if err := unmarshal(&text); err == nil {
		return u.UnmarshalText([]byte(text))
	}
	var one T
	if err := unmarshal(&one); err == nil {
		*u = UserIDs[T]{one}
		return nil
	}
	return errors.New("allowed_users is a list of user ids or a comma-separated string of them")
}

// UnmarshalText parses a comma-separated list of ids.
func (u *UserIDs[T]) UnmarshalText(b []byte) error {
	var out UserIDs[T]
	for _, f := range strings.Split(string(b), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var v any = f
		var zero T
		if _, numeric := any(zero).(int64); numeric {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a numeric user id", f)
			}
			v = id
		}
		out = append(out, v.(T))
	}
	*u = out
	return nil
}

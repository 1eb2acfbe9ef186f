package eventbus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/textclip"
)

// MaxTopicLen is the longest topic accepted, in bytes.
const MaxTopicLen = 128

// ErrInvalidTopic is returned (wrapped, with the reason) by Publish,
// PublishID and PublishBatch for an empty, over-long or malformed topic, and
// by Subscribe, Watch and Recent for a malformed prefix.
var ErrInvalidTopic = errors.New("invalid event topic")

// ErrInvalidPayload is returned (wrapped) when a payload cannot be marshalled
// to JSON or a json.RawMessage payload is not valid JSON.
var ErrInvalidPayload = errors.New("invalid event payload")

// validateTopic checks a topic: non-empty, at most MaxTopicLen bytes, valid
// UTF-8 without spaces or control characters.
func validateTopic(topic string) error {
	if topic == "" {
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	}
	return validatePrefix(topic)
}

// validatePrefix checks a subscription or filter prefix; "" (every topic) is
// allowed.
func validatePrefix(prefix string) error {
	if len(prefix) > MaxTopicLen {
		return fmt.Errorf("%w: %q is %d bytes, the limit is %d", ErrInvalidTopic, textclip.Runes(prefix, 40), len(prefix), MaxTopicLen)
	}
	if !utf8.ValidString(prefix) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidTopic, prefix)
	}
	if i := strings.IndexFunc(prefix, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("%w: %q contains a space or control character at byte %d", ErrInvalidTopic, prefix, i)
	}
	return nil
}

// matches reports whether topic is selected by prefix ("" selects all).
func matches(prefix, topic string) bool { return strings.HasPrefix(topic, prefix) }

// prefixRange returns the half-open byte range [lo, hi) of topics starting
// with prefix, for an indexable SQL comparison. Topics are valid UTF-8, which
// never contains the byte 0xff, so prefix+"\xff" bounds every extension of
// prefix.
func prefixRange(prefix string) (lo, hi string) {
	return prefix, prefix + "\xff"
}

// marshalPayload encodes payload with encoding/json. A json.RawMessage (or
// *json.RawMessage) is checked and passed through unchanged; nil is "null".
func marshalPayload(payload any) (json.RawMessage, error) {
	switch p := payload.(type) {
	case json.RawMessage:
		if p == nil {
			return json.RawMessage("null"), nil
		}
		if !json.Valid(p) {
			return nil, fmt.Errorf("%w: raw JSON is malformed", ErrInvalidPayload)
		}
		return p, nil
	case *json.RawMessage:
		if p == nil {
			return json.RawMessage("null"), nil
		}
		return marshalPayload(*p)
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	return b, nil
}

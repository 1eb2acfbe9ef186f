package extensiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/extension"
)

// DefaultMaxAttempts is how many times the fake Bus delivers an event to a
// subscriber whose handler keeps failing before dead-lettering it.
const DefaultMaxAttempts = 3

// DeadLetter is an event a subscriber failed to handle DefaultMaxAttempts
// times.
type DeadLetter struct {
	Subscriber string
	Event      extension.Event
	Err        error
}

type subscription struct {
	name    string
	prefix  string
	handler extension.Handler
}

// Bus is an in-memory extension.Bus. Publish records the event and delivers
// it synchronously, in subscription order, to every subscriber whose prefix
// matches, retrying a failing handler immediately (Attempt counts up) and
// dead-lettering it after DefaultMaxAttempts. A handler may publish.
type Bus struct {
	now   func() time.Time
	scope string // prefix of subscriber names, as the kernel namespaces them

	mu     sync.Mutex
	events []extension.Event
	subs   []subscription
	dead   []DeadLetter
}

// NewBus returns an empty bus stamping events with now.
func NewBus(now func() time.Time) *Bus {
	if now == nil {
		now = time.Now
	}
	return &Bus{now: now}
}

// Publish marshals payload to JSON, records the event and delivers it.
func (b *Bus) Publish(ctx context.Context, topic string, payload any) error {
	if topic == "" {
		return errors.New("publish: empty topic")
	}
	if err := checkTopic(topic); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("publish %s: marshal payload: %w", topic, err)
	}
	b.mu.Lock()
	ev := extension.Event{ID: int64(len(b.events) + 1), Topic: topic, Payload: data, Time: b.now()}
	b.events = append(b.events, ev)
	var targets []subscription
	for _, s := range b.subs {
		if strings.HasPrefix(topic, s.prefix) {
			targets = append(targets, s)
		}
	}
	b.mu.Unlock()

	for _, s := range targets {
		var herr error
		for attempt := 1; attempt <= DefaultMaxAttempts; attempt++ {
			ev.Attempt = attempt
			if herr = s.handler(ctx, ev); herr == nil {
				break
			}
		}
		if herr != nil {
			b.mu.Lock()
			b.dead = append(b.dead, DeadLetter{Subscriber: s.name, Event: ev, Err: herr})
			b.mu.Unlock()
		}
	}
	return nil
}

// Subscribe registers h for every topic starting with prefix. Names are
// namespaced "<id>/<name>" as the kernel does; a duplicate name is an error.
func (b *Bus) Subscribe(name, prefix string, h extension.Handler) error {
	if name == "" {
		return errors.New("subscribe: empty subscriber name")
	}
	if h == nil {
		return fmt.Errorf("subscribe %s: nil handler", name)
	}
	if err := checkTopic(prefix); err != nil {
		return fmt.Errorf("subscribe %s: %w", name, err)
	}
	if b.scope != "" {
		name = b.scope + "/" + name
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if s.name == name {
			return fmt.Errorf("subscribe %s: name already used", name)
		}
	}
	b.subs = append(b.subs, subscription{name: name, prefix: prefix, handler: h})
	return nil
}

// MaxTopicLen is the longest topic (or prefix) the bus accepts, in bytes,
// as the real bus.
const MaxTopicLen = 128

// checkTopic applies the real bus's rules to a topic or prefix: at most
// MaxTopicLen bytes of valid UTF-8 without spaces or control characters.
func checkTopic(s string) error {
	if len(s) > MaxTopicLen {
		return fmt.Errorf("topic %q is longer than %d bytes", s, MaxTopicLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("topic %q is not valid UTF-8", s)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("topic %q contains a space or control character", s)
	}
	return nil
}

// Events returns every published event in order.
func (b *Bus) Events() []extension.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

// Published returns the published events whose topic starts with prefix.
func (b *Bus) Published(prefix string) []extension.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []extension.Event
	for _, ev := range b.events {
		if strings.HasPrefix(ev.Topic, prefix) {
			out = append(out, ev)
		}
	}
	return out
}

// Subscribers returns the (namespaced) names of the subscribers in
// subscription order.
func (b *Bus) Subscribers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, len(b.subs))
	for i, s := range b.subs {
		out[i] = s.name
	}
	return out
}

// DeadLetters returns the deliveries that failed every attempt.
func (b *Bus) DeadLetters() []DeadLetter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.dead)
}

var _ extension.Bus = (*Bus)(nil)

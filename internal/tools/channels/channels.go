// Package channels provides the tools through which the assistant sees and
// uses its channels — list_channels and send_to_channel — and request_restart,
// which asks the supervisor to restart the agent.
//
// The tools are safe for concurrent use. send_to_channel only queues the
// message (through the router's Notify): it is stored and delivered in the
// target thread's order, never in the middle of another turn.
package channels

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/tool"
)

// Channels lists the running channels (*kernel.Kernel).
type Channels interface {
	Channels() []extension.ChannelProvider
}

// Threads lists known conversations (*conversation.Store).
type Threads interface {
	Threads(ctx context.Context, opts conversation.ListOptions) ([]conversation.Thread, error)
}

// Notifier queues a proactive message (*router.Router).
type Notifier interface {
	Notify(ctx context.Context, out chat.Outbound) error
}

// maxListedThreads bounds the threads list_channels names per channel.
const maxListedThreads = 20

// ChannelInfo is one entry of list_channels' result.
type ChannelInfo struct {
	Name      string   `json:"name"`
	Streaming bool     `json:"streaming"`
	Threads   []string `json:"threads"`
	// MoreThreads counts threads left out of Threads.
	MoreThreads int `json:"more_threads,omitempty"`
}

type listArgs struct{}

// ListChannels is the list_channels tool: every running channel, whether it
// streams, and its known threads (most recent first).
func ListChannels(chs Channels, threads Threads) tool.Tool {
	return tool.New("list_channels",
		"List the channels you can talk to the user through (web, cli, matrix, telegram, …), whether each streams replies, and the conversation threads known on each, most recent first. Use it before send_to_channel.",
		func(ctx context.Context, _ listArgs) (any, error) {
			all, err := threads.Threads(ctx, conversation.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("list threads: %w", err)
			}
			byChannel := map[string][]string{}
			for _, t := range all {
				c := t.ID.Channel()
				byChannel[c] = append(byChannel[c], string(t.ID))
			}
			out := []ChannelInfo{}
			for _, ch := range chs.Channels() {
				_, streaming := ch.(extension.StreamingChannelProvider)
				ts := byChannel[ch.ChannelName()]
				info := ChannelInfo{Name: ch.ChannelName(), Streaming: streaming, Threads: []string{}}
				if len(ts) > maxListedThreads {
					info.MoreThreads = len(ts) - maxListedThreads
					ts = ts[:maxListedThreads]
				}
				info.Threads = append(info.Threads, ts...)
				out = append(out, info)
			}
			slices.SortFunc(out, func(a, b ChannelInfo) int { return strings.Compare(a.Name, b.Name) })
			return struct {
				Channels []ChannelInfo `json:"channels"`
			}{out}, nil
		}, tool.ReadOnly(), tool.WithCategories("orchestration"))
}

type sendArgs struct {
	Channel string `json:"channel" jsonschema:"channel name as list_channels gives it, e.g. telegram"`
	Thread  string `json:"thread,omitempty" jsonschema:"thread id on that channel (e.g. telegram:1234, or just 1234); default: the channel's most recent thread"`
	Text    string `json:"text" jsonschema:"the message to send"`
}

// SendToChannel is the send_to_channel tool: a message to a thread of a
// channel, queued through n (stored in that thread and delivered in order).
func SendToChannel(n Notifier, chs Channels, threads Threads) tool.Tool {
	return tool.New("send_to_channel",
		"Send a message to the user on a specific channel and thread (for example to answer on Telegram what was asked on the web). Without thread, the channel's most recent conversation is used. The message is stored in that conversation and delivered in order.",
		func(ctx context.Context, a sendArgs) (any, error) {
			if strings.TrimSpace(a.Text) == "" {
				return nil, errors.New("text is empty")
			}
			if !hasChannel(chs, a.Channel) {
				return nil, fmt.Errorf("no channel named %q is running; running channels: %s", a.Channel, strings.Join(channelNames(chs), ", "))
			}
			thread, err := resolveThread(ctx, threads, a.Channel, a.Thread)
			if err != nil {
				return nil, err
			}
			if err := n.Notify(ctx, chat.Outbound{Address: chat.Address{Channel: a.Channel, Thread: thread}, Kind: chat.Notify, Text: a.Text}); err != nil {
				return nil, fmt.Errorf("queue the message: %w", err)
			}
			return struct {
				OK     bool   `json:"ok"`
				Thread string `json:"thread"`
				Note   string `json:"note"`
			}{true, string(thread), "queued: it is stored in that conversation and delivered in order"}, nil
		}, tool.SendsOutTo(func(a sendArgs) []tool.Destination {
			return []tool.Destination{{Channel: a.Channel, Thread: a.Thread, Data: a.Text}}
		}), tool.WithCategories("orchestration"))
}

func hasChannel(chs Channels, name string) bool {
	return slices.Contains(channelNames(chs), name)
}

func channelNames(chs Channels) []string {
	var out []string
	for _, ch := range chs.Channels() {
		out = append(out, ch.ChannelName())
	}
	slices.Sort(out)
	return out
}

// resolveThread turns the tool's thread argument into a thread id of the
// channel: a full id must belong to the channel, a bare target gets the
// channel prefix, none picks the channel's most recent thread.
func resolveThread(ctx context.Context, threads Threads, channel, thread string) (chat.ThreadID, error) {
	thread = strings.TrimSpace(thread)
	if thread == "" {
		all, err := threads.Threads(ctx, conversation.ListOptions{})
		if err != nil {
			return "", fmt.Errorf("list threads: %w", err)
		}
		for _, t := range all {
			if t.ID.Channel() == channel {
				return t.ID, nil
			}
		}
		return "", fmt.Errorf("no conversation is known on channel %q yet; give thread explicitly", channel)
	}
	id := chat.ThreadID(thread)
	if !strings.HasPrefix(thread, channel+":") {
		// A target may contain colons itself (a Matrix room id,
		// "!abc:example.org"): only a channel-like prefix names a channel.
		if c := id.Channel(); c != "" && channelLike(c) {
			return "", fmt.Errorf("thread %q belongs to channel %q, not %q", thread, id.Channel(), channel)
		}
		id = chat.NewThreadID(channel, thread)
	}
	if err := id.Validate(); err != nil {
		return "", err
	}
	return id, nil
}

// channelLike reports whether s looks like a channel name (lower-case
// letters, digits, _ and -, starting with a letter).
func channelLike(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return s != ""
}

type restartArgs struct {
	Reason string `json:"reason" jsonschema:"why the restart is needed (logged by the supervisor)"`
}

// RequestRestart is the request_restart tool: it writes
// <dataDir>/datadir.RestartFile with the reason as its first line; the
// supervisor (`reverie run`) sees it and restarts the agent gracefully.
func RequestRestart(dataDir string, now func() time.Time) tool.Tool {
	if now == nil {
		now = time.Now
	}
	return tool.New("request_restart",
		"Ask for a graceful restart of the assistant (for example after its configuration or extensions changed). The current turn finishes first; the restart follows within seconds when Reverie runs under its supervisor (`reverie run`).",
		func(ctx context.Context, a restartArgs) (any, error) {
			reason := strings.Join(strings.Fields(a.Reason), " ")
			if reason == "" {
				return nil, errors.New("reason is empty: say why the restart is needed")
			}
			path := filepath.Join(dataDir, datadir.RestartFile)
			content := reason + "\n" + now().UTC().Format(time.RFC3339) + "\n"
			if err := writeAtomic(path, content); err != nil {
				return nil, fmt.Errorf("write the restart request: %w", err)
			}
			return "Restart requested (" + reason + "). The supervisor restarts the agent gracefully within a few seconds; " +
				"if the agent runs without it (`reverie agent`), it must be restarted by hand.", nil
		})
}

// writeAtomic writes content to path through a temporary file and a rename,
// so the supervisor never reads a half-written reason.
func writeAtomic(path, content string) error { return datadir.WriteFile(path, []byte(content), 0o600) }

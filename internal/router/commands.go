package router

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
)

// Command is a slash command available on every channel.
type Command struct {
	// Name without the slash: lower-case letters, digits and '_'.
	Name string
	// Help is one line for /help.
	Help string
	// Run answers the command; its text is the reply. An error is reported
	// to the user as the command's failure.
	Run func(ctx context.Context, cc CommandContext) (string, error)

	placeholder bool
}

// CommandContext is what a command knows about its invocation. Commands run
// in the thread's queue: no turn of the thread runs at the same time.
type CommandContext struct {
	Thread  chat.ThreadID
	Channel string
	Sender  chat.Sender
	// Args is the text after the command name, trimmed.
	Args string
}

// ErrDuplicateCommand is returned by Register for a name already taken by
// another real command (placeholders are replaced).
var ErrDuplicateCommand = errors.New("command already registered")

// validCommandName reports whether name is a command name: a lowercase
// letter then up to 31 lowercase letters, digits and underscores
// (`^[a-z][a-z0-9_]{0,31}$`, checked by hand: the compiled repetition kept
// 11 KB alive; FuzzValidCommandName compares the two).
func validCommandName(name string) bool {
	if name == "" || len(name) > 32 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Register adds a command. A placeholder built-in (/dream, /pulse,
// /reminders say "not enabled in this build") is replaced by the real one.
func (r *Router) Register(c Command) error {
	if !validCommandName(c.Name) {
		return fmt.Errorf("register command %q: invalid name", c.Name)
	}
	if c.Run == nil {
		return fmt.Errorf("register command /%s: no Run", c.Name)
	}
	r.cmdMu.Lock()
	defer r.cmdMu.Unlock()
	if old, ok := r.commands[c.Name]; ok && !old.placeholder {
		return fmt.Errorf("register command /%s: %w", c.Name, ErrDuplicateCommand)
	}
	r.commands[c.Name] = c
	return nil
}

// Commands returns the registered commands sorted by name.
func (r *Router) Commands() []Command {
	r.cmdMu.RLock()
	defer r.cmdMu.RUnlock()
	out := make([]Command, 0, len(r.commands))
	for _, c := range r.commands {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// commandPattern: "/name", "/name args", "/name@bot args" (Telegram). A slash
// followed by anything else ("/usr/bin is …") is an ordinary message.
var commandPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/([A-Za-z][A-Za-z0-9_]*)(?:@\S+)?(?:\s+([\s\S]*))?$`)
})

func parseCommand(text string) (name, args string, ok bool) {
	m := commandPattern().FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return "", "", false
	}
	return strings.ToLower(m[1]), strings.TrimSpace(m[2]), true
}

func (r *Router) processCommand(ctx context.Context, j *job, name, args string) outcome {
	// A command is not conversation content: its inbox row goes now.
	r.forget(ctx, j)
	r.cmdMu.RLock()
	c, ok := r.commands[name]
	r.cmdMu.RUnlock()
	var (
		text string
		err  error
	)
	if !ok {
		text = fmt.Sprintf("Unknown command /%s. Type /help for the list of commands.", name)
	} else {
		text, err = r.runCommand(ctx, c, CommandContext{Thread: j.thread, Channel: j.channel, Sender: j.sender, Args: args})
		if err != nil {
			// The reason as a person reads it, as every other surface answers
			// it (without "conflict: " or "not found: " in front).
			text = fmt.Sprintf("/%s failed: %s", name, api.Reason(err))
			err = fmt.Errorf("command /%s on %s: %w", name, j.thread, err)
		}
	}
	if j.delivers() && strings.TrimSpace(text) != "" {
		kind := chat.Reply
		if err != nil {
			kind = chat.Error
		}
		r.send(ctx, j.channel, chat.Outbound{Address: chat.Address{Channel: j.channel, Thread: j.thread}, Kind: kind, Text: text})
	}
	return outcome{res: agent.Result{Reply: text}, err: err}
}

func (r *Router) runCommand(ctx context.Context, c Command, cc CommandContext) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return c.Run(ctx, cc)
}

func (r *Router) registerBuiltins() {
	builtins := []Command{
		{Name: "new", Help: "start a new conversation (the old one is archived)", Run: r.cmdNew},
		{Name: "compact", Help: "summarise older messages of this conversation now", Run: r.cmdCompact},
		{Name: "status", Help: "models, uptime, conversations, queue and today's usage", Run: r.cmdStatus},
		{Name: "help", Help: "list the commands", Run: r.cmdHelp},
		{Name: "debug", Help: "where to find the debug panel", Run: r.cmdDebug},
		placeholder("dream", "consolidate memories now (nightly dreaming)"),
		placeholder("pulse", "show the pulse (work in progress)"),
		placeholder("reminders", "list reminders and scheduled tasks"),
	}
	for _, c := range builtins {
		r.commands[c.Name] = c
	}
}

// placeholder is a command of a feature this build lacks; the feature's
// Register replaces it.
func placeholder(name, help string) Command {
	return Command{Name: name, Help: help + " (not enabled in this build)", placeholder: true,
		Run: func(context.Context, CommandContext) (string, error) {
			return fmt.Sprintf("/%s is not enabled in this build.", name), nil
		}}
}

func (r *Router) cmdNew(ctx context.Context, cc CommandContext) (string, error) {
	if err := r.o.Threads.Reset(ctx, cc.Thread); err != nil {
		return "", fmt.Errorf("reset the conversation: %w", err)
	}
	r.mu.Lock()
	r.known[cc.Thread] = true
	r.mu.Unlock()
	res, err := r.o.Agent.Seed(ctx, cc.Thread, nil)
	if err != nil {
		return "Started a new conversation. (" + res.Reply + ")", nil
	}
	r.handleFollowUps(ctx, res.FollowUps)
	return res.Reply, nil
}

func (r *Router) cmdCompact(ctx context.Context, cc CommandContext) (string, error) {
	res, err := r.o.Agent.Compact(ctx, cc.Thread)
	if err != nil {
		return "", err
	}
	if res.Archived == 0 {
		return "Nothing to compact yet: the conversation is short.", nil
	}
	return fmt.Sprintf("Compacted: %d older messages are now a summary (%d characters); the last messages stay as they are.",
		res.Archived, len([]rune(res.Summary))), nil
}

func (r *Router) cmdHelp(ctx context.Context, cc CommandContext) (string, error) {
	var b strings.Builder
	b.WriteString("Commands:")
	for _, c := range r.Commands() {
		fmt.Fprintf(&b, "\n/%s — %s", c.Name, c.Help)
	}
	return b.String(), nil
}

func (r *Router) cmdDebug(ctx context.Context, cc CommandContext) (string, error) {
	url := r.o.DebugURL
	if r.o.PanelURL != nil {
		url = r.o.PanelURL()
	}
	if url == "" {
		return "The debug panel is not available: the web channel is not running.", nil
	}
	return "Debug panel (interaction log, events, prompts): " + url, nil
}

func (r *Router) cmdStatus(ctx context.Context, cc CommandContext) (string, error) {
	var b strings.Builder
	b.WriteString("Reverie status")
	if r.o.Describe != nil && len(r.o.Roles) > 0 {
		b.WriteString("\nModels:")
		for _, role := range r.o.Roles {
			fmt.Fprintf(&b, "\n  %s: %s", role, r.o.Describe(role))
		}
	}
	fmt.Fprintf(&b, "\nUptime: %s", r.o.Now().Sub(r.start).Round(time.Second))
	if threads, err := r.o.Threads.Threads(ctx, conversation.ListOptions{}); err != nil {
		fmt.Fprintf(&b, "\nConversations: unknown (%v)", err)
	} else {
		fmt.Fprintf(&b, "\nConversations: %d", len(threads))
	}
	r.mu.Lock()
	active := r.active - 1 // this command runs in a turn's slot of its own
	r.mu.Unlock()
	fmt.Fprintf(&b, "\nTurns running: %d, waiting: %d", active, r.QueueDepth())
	if r.o.UsageToday != nil {
		if u, err := r.o.UsageToday(ctx); err != nil {
			fmt.Fprintf(&b, "\nToday's usage: unknown (%v)", err)
		} else {
			fmt.Fprintf(&b, "\nToday's usage: %d input + %d output tokens", u.InputTokens, u.OutputTokens)
		}
	}
	if r.o.UsageByRole != nil {
		if rows, err := r.o.UsageByRole(ctx); err == nil {
			for _, ru := range rows {
				fmt.Fprintf(&b, "\n  %s: %d call(s), %d + %d tokens", ru.Role, ru.Calls, ru.Usage.InputTokens, ru.Usage.OutputTokens)
			}
		}
	}
	if r.o.Memory != nil {
		if m := r.o.Memory(ctx); m != "" {
			fmt.Fprintf(&b, "\nMemory: %s", m)
		}
	}
	if r.o.Extensions != nil {
		if exts := r.o.Extensions(ctx); len(exts) > 0 {
			b.WriteString("\nExtensions:")
			for _, e := range exts {
				fmt.Fprintf(&b, "\n  %s: %s", e.ID, e.State)
				if e.Health != "" && e.Health != "none" {
					fmt.Fprintf(&b, ", health %s", e.Health)
				}
				if e.Detail != "" {
					fmt.Fprintf(&b, " (%s)", e.Detail)
				}
			}
		}
	}
	return b.String(), nil
}

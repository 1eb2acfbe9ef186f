package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/reverie-ai/reverie/chat"
)

// maxLineBytes bounds one input line of the plain mode.
const maxLineBytes = 1 << 20

// ErrFailed is returned by RunPlain when at least one message failed (its
// explanation was written to the error output).
var ErrFailed = errors.New("some messages failed")

// RunPlain is the chat for scripts: it reads messages from in, one per
// line (a line ending in a backslash continues on the next line; blank
// lines are skipped), sends each, waits for its reply and prints it to out
// as plain text. A new conversation's greeting, notifications and failures
// go to errOut, so out holds exactly one reply per message. It returns at
// the end of in after the last reply; ErrFailed when a message failed,
// another error when reading or the backend failed. /retry, /edit TEXT and
// /rename TITLE are the chat's own commands here too (the new title is the
// line printed for /rename).
func RunPlain(ctx context.Context, b Backend, in io.Reader, out, errOut io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var (
		failed, sent int
		parts        []string
	)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			parts = append(parts, cont)
			continue
		}
		parts = append(parts, line)
		text := strings.Join(parts, "\n")
		parts = parts[:0]
		if strings.TrimSpace(text) == "" {
			continue
		}
		sent++
		ok, err := plainExchange(ctx, b, text, out, errOut)
		if err != nil {
			return err
		}
		if !ok {
			failed++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	if len(parts) > 0 && strings.TrimSpace(strings.Join(parts, "\n")) != "" {
		sent++
		ok, err := plainExchange(ctx, b, strings.Join(parts, "\n"), out, errOut)
		if err != nil {
			return err
		}
		if !ok {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d", ErrFailed, failed, sent)
	}
	return nil
}

// plainExchange sends one message and prints what it causes; ok is false
// when the message failed. An error means the chat cannot go on.
func plainExchange(ctx context.Context, b Backend, text string, out, errOut io.Writer) (ok bool, err error) {
	start := func() error { return b.Send(ctx, text) }
	if arg, ok := localCommand(text, "rename"); ok {
		return plainRename(ctx, b, arg, out, errOut)
	}
	if arg, ok := localCommand(text, "retry"); ok {
		start = func() error {
			if arg != "" {
				return errors.New("/retry takes no argument")
			}
			if _, ok, err := b.LastUserMessage(ctx); err != nil || !ok {
				return cmp.Or(err, errors.New("nothing to retry yet: this conversation has no message of yours"))
			}
			return b.Regenerate(ctx)
		}
	}
	if arg, ok := localCommand(text, "edit"); ok {
		start = func() error {
			if arg == "" {
				return errors.New("/edit TEXT replaces your last message with TEXT (editing it in place needs the interactive chat)")
			}
			msg, ok, err := b.LastUserMessage(ctx)
			if err != nil || !ok {
				return cmp.Or(err, errors.New("nothing to edit yet: this conversation has no message of yours"))
			}
			return b.Edit(ctx, msg.ID, arg)
		}
	}
	if err := start(); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		fmt.Fprintf(errOut, "not sent: %s\n", sanitize(err.Error()))
		return false, nil
	}
	var reply, failure string
	for {
		ev, err := b.Next(ctx)
		if err != nil {
			return false, err
		}
		switch ev.Kind {
		case EventDone:
			if reply != "" {
				// An earlier reply of the same message: a new
				// conversation's greeting.
				fmt.Fprintln(errOut, sanitize(reply))
			}
			reply = ev.Text
		case EventError:
			failure = ev.Text
		case EventNotify:
			fmt.Fprintln(errOut, "notice: "+sanitize(ev.Text))
		case EventWait:
			fmt.Fprintln(errOut, "wait: "+sanitize(ev.Text))
		case EventApproval:
			if ev.State == chat.ApprovalPending {
				fmt.Fprintf(errOut, "approval needed: %s %s (%s); answer it on the web page or in the interactive chat\n",
					sanitize(ev.Tool), sanitize(string(ev.Arguments)), sanitize(ev.Text))
			}
		case EventIdle:
			if failure == "" && ev.Err != "" {
				failure = ev.Err
			}
			if failure != "" {
				if reply != "" {
					fmt.Fprintln(errOut, sanitize(reply))
				}
				fmt.Fprintln(errOut, "error: "+sanitize(failure))
				return false, nil
			}
			fmt.Fprintln(out, sanitize(reply))
			return true, nil
		}
	}
}

// plainRename is /rename TITLE in the plain mode: the new title is the
// line printed.
func plainRename(ctx context.Context, b Backend, title string, out, errOut io.Writer) (bool, error) {
	if title == "" {
		fmt.Fprintln(errOut, "error: /rename TITLE names this conversation")
		return false, nil
	}
	th, err := b.Rename(ctx, title)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		fmt.Fprintf(errOut, "error: not renamed: %s\n", sanitize(err.Error()))
		return false, nil
	}
	fmt.Fprintf(out, "This conversation is now “%s”\n", sanitize(th.Title))
	return true, nil
}

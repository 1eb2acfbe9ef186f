package cli

import (
	"bufio"
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
// another error when reading or the backend failed.
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
	if err := b.Send(ctx, text); err != nil {
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

package channelkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/tool"
)

// OutgoingFile is a workspace file a send-file tool hands to its channel.
type OutgoingFile struct {
	// Name is the file's base name.
	Name string
	// Size is its length in bytes (at most SendFile.MaxBytes).
	Size int64
	// Caption is the text the model asked to send with it ("" for none).
	Caption string
	// Content reads the file from its start; an upload that is retried
	// seeks back to 0 first. It is closed when Upload returns.
	Content io.ReadSeeker
}

// SendFile describes a channel's <channel>_send_file tool (SendFileTool).
type SendFile struct {
	// Channel is the channel's name ("telegram"): the tool is named
	// <Channel>_send_file, and a bare thread target is taken as being on it.
	Channel string
	// Description says what the tool does on this platform; the tool adds
	// that a Telegram conversation's file goes to that chat, and the form
	// of a thread (ThreadForm).
	Description string
	// ThreadForm is the form of the channel's threads, for the model and
	// for errors ("telegram:<chat id>").
	ThreadForm string
	// Workspace is the workspace directory (<data>/workspace); the tool
	// opens nothing outside it.
	Workspace string
	// MaxBytes bounds the file (the platform's upload limit).
	MaxBytes int64
	// CheckThread returns an error when thread is not one of the channel's
	// (it names what a thread looks like).
	CheckThread func(thread chat.ThreadID) error
	// Ready, when set, returns an error while the channel cannot send
	// (not connected yet).
	Ready func() error
	// Upload sends the file to thread and says how it went ("photo",
	// "document", "image", "file").
	Upload func(ctx context.Context, thread chat.ThreadID, f OutgoingFile) (sentAs string, err error)
}

// sendFileArgs are a send-file tool's arguments.
type sendFileArgs struct {
	Path    string `json:"path" jsonschema:"the file's path in the workspace (as read_file takes it)"`
	Caption string `json:"caption,omitempty" jsonschema:"a short text sent with the file"`
	Thread  string `json:"thread,omitempty" jsonschema:"the conversation to send it to (the form is in the description); default: this conversation when it is on this channel"`
}

// SentFile is a send-file tool's result.
type SentFile struct {
	OK     bool   `json:"ok"`
	SentAs string `json:"sent_as"`
	Thread string `json:"thread"`
}

// SendFileTool builds the channel's send-file tool: it sends a workspace
// file to the conversation the call came from (when that is on the
// channel) or to the thread named. It is outward (the thread named is its
// destination) and asks for approval of any thread other than the
// conversation's (tool.ApproveNewDestinations) unless tools.approval says
// otherwise. Failures are errors for the model: not the channel's
// conversation, a path outside the workspace, a directory, a file over
// MaxBytes, the platform's refusal.
func SendFileTool(s SendFile) tool.Tool {
	name := s.Channel + "_send_file"
	desc := fmt.Sprintf("%s In a conversation on %s it goes to that conversation; elsewhere give thread (%s).",
		strings.TrimSpace(s.Description), s.Channel, s.ThreadForm)
	return tool.New(name, desc, func(ctx context.Context, a sendFileArgs) (any, error) {
		th := chat.ThreadID(strings.TrimSpace(a.Thread))
		if th == "" {
			if c, ok := tool.CallFrom(ctx); ok {
				th = c.Thread
			}
		} else if th.Channel() == "" {
			th = chat.NewThreadID(s.Channel, string(th))
		}
		if err := s.CheckThread(th); err != nil {
			return nil, fmt.Errorf("%w: give thread (%s) when this conversation is not on %s", err, s.ThreadForm, s.Channel)
		}
		if s.Ready != nil {
			if err := s.Ready(); err != nil {
				return nil, err
			}
		}
		f, rel, size, err := openWorkspaceFile(s.Workspace, a.Path, s.MaxBytes)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sentAs, err := s.Upload(ctx, th, OutgoingFile{Name: path.Base(rel), Size: size, Caption: a.Caption, Content: f})
		if err != nil {
			return nil, fmt.Errorf("send %s: %w", a.Path, err)
		}
		return SentFile{OK: true, SentAs: sentAs, Thread: string(th)}, nil
	}, tool.SendsOutTo(sendFileDestinations), tool.DefaultApproval(tool.ApproveNewDestinations),
		tool.WithCategories("orchestration"))
}

// openWorkspaceFile opens p (as read_file takes it: relative to the
// workspace, "workspace/" allowed in front) inside dir, never outside it,
// and checks that it is a file of at most max bytes.
func openWorkspaceFile(dir, p string, max int64) (*os.File, string, int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", 0, fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	rel := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(p, "workspace/")), "/")
	f, err := root.Open(rel)
	if err != nil {
		return nil, "", 0, fmt.Errorf("open %s in the workspace: %w", p, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = fmt.Errorf("%s is a directory", p)
	case fi.Size() > max:
		err = fmt.Errorf("%s is %d bytes; the bot sends at most %d", p, fi.Size(), max)
	}
	if err != nil {
		return nil, "", 0, errors.Join(err, f.Close())
	}
	return f, rel, fi.Size(), nil
}

// sendFileDestinations: the file goes to the thread named, or to this
// conversation (no destination of its own) when none is.
func sendFileDestinations(a sendFileArgs) []tool.Destination {
	if strings.TrimSpace(a.Thread) == "" {
		return nil
	}
	return []tool.Destination{{Thread: strings.TrimSpace(a.Thread), Data: strings.TrimSpace("the file " + a.Path + " " + a.Caption)}}
}

package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// Spoken replies: the router saves each part of a reply spoken aloud under
// the workspace's voice/web/<session>/ and calls SendVoice; the page gets a
// "voice" frame naming GET /api/v1/threads/{thread}/speech/{file}, which it
// fetches with the token and plays from the reply's play button.

// speechDir is the workspace directory of a web thread's spoken replies.
func speechDir(t chat.ThreadID) string {
	return path.Join("voice", ChannelName, extension.SafeName(t.Target()))
}

// SendVoice implements extension.VoiceChannelProvider: a "voice" frame to
// the thread's connections. A file outside the thread's speech directory is
// refused.
func (w *Web) SendVoice(_ context.Context, addr chat.Address, sp chat.Speech) error {
	dir, name := path.Split(sp.Path)
	if path.Clean(dir) != speechDir(addr.Thread) || name == "" {
		return fmt.Errorf("spoken reply %q is not in %s", sp.Path, speechDir(addr.Thread))
	}
	w.hub.toThread(addr.Thread, &api.ServerFrame{Type: api.FrameVoice, Thread: addr.Thread, Text: sp.Text,
		Audio:     api.Prefix + "/threads/" + url.PathEscape(string(addr.Thread)) + "/speech/" + url.PathEscape(name),
		MediaType: sp.MediaType, Part: sp.Part, Parts: sp.Parts})
	return nil
}

// getSpeech is GET /api/v1/threads/{thread}/speech/{file}: a spoken reply
// of the thread, as audio.
func (w *Web) getSpeech(rw http.ResponseWriter, r *http.Request) {
	t, err := webThread(r.PathValue("thread"))
	if err != nil {
		w.serviceError(rw, r, fmt.Errorf("%w: %v", api.ErrInvalid, err))
		return
	}
	name := r.PathValue("file")
	if name == "" || extension.SafeName(name) != name || !strings.HasSuffix(name, ".ogg") {
		w.serviceError(rw, r, fmt.Errorf("%w: %q is not a spoken reply's file name", api.ErrInvalid, name))
		return
	}
	root, err := os.OpenRoot(filepath.Join(w.host.DataDir(), workspaceDir))
	if err != nil {
		writeError(rw, http.StatusNotFound, "no spoken reply "+name)
		return
	}
	defer root.Close()
	data, err := root.ReadFile(path.Join(speechDir(t), name))
	if errors.Is(err, fs.ErrNotExist) {
		writeError(rw, http.StatusNotFound, "no spoken reply "+name)
		return
	}
	if err != nil {
		w.serviceError(rw, r, fmt.Errorf("read the spoken reply: %w", err))
		return
	}
	rw.Header().Set("Content-Type", "audio/ogg")
	rw.Header().Set("Cache-Control", "private, max-age=86400")
	_, _ = rw.Write(data)
}

package channelkit

import (
	"fmt"
	"os"
	"path"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// maxSavedName bounds the name part of a saved file (its end is kept, so
// the extension stays).
const maxSavedName = 80

// SaveFile writes data, a file that came with a message, into the
// workspace (the directory workspace, created when missing) as
// <dir>/<when, UTC, 20060102-150405>-<id>-<name>, and returns that path
// (relative to the workspace, slash-separated) for chat.Attachment or a
// note to the model. dir is the channel's folder for the conversation
// ("telegram/1234"); id tells apart files of the same second (the
// message's id); name is made safe (extension.SafeName, "file" when
// nothing is left, at most 80 bytes). Files and folders are private to
// the user (0600, 0700). The same message saves to the same path, so a
// message handled again overwrites its own file.
func SaveFile(workspace, dir string, when time.Time, id, name string, data []byte) (string, error) {
	name = extension.SafeName(path.Base(name))
	if name == "" {
		name = "file"
	}
	if len(name) > maxSavedName {
		name = name[len(name)-maxSavedName:]
	}
	rel := path.Join(dir, fmt.Sprintf("%s-%s-%s", when.UTC().Format("20060102-150405"), id, name))
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := root.WriteFile(rel, data, 0o600); err != nil {
		return "", err
	}
	return rel, nil
}

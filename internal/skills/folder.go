package skills

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxFileBytes caps what ReadFile returns of one file of a skill folder.
const MaxFileBytes = 256 << 10

// maxListed caps the file names an error lists.
const maxListed = 60

// folderNote ends a folder skill's text in the prompt: where its files
// are and how to use them.
func (s *Store) folderNote(name string) string {
	dir := filepath.Join(s.dir, name)
	return fmt.Sprintf("(This skill is the folder %s. Read the other files it names with read_skill (name %q, path relative to the folder); "+
		"run its scripts only with execute_shell, from that folder's path (it is readable, not writable, in the sandbox).)", dir, name)
}

// FolderDir returns the absolute folder of skill name when it is a
// folder skill.
func (s *Store) FolderDir(ctx context.Context, name string) (string, error) {
	sk, err := s.Get(ctx, name)
	if err != nil {
		return "", err
	}
	if !sk.Folder {
		return "", fmt.Errorf("skill %s is a single file (%s): it has no other files", sk.Name, sk.Path())
	}
	return filepath.Join(s.dir, sk.Name), nil
}

// ReadFile returns the text of file rel of folder skill name. rel is
// relative to the folder and confined to it (no "..", no absolute path,
// no symbolic link out of it: os.Root); when no file has exactly that
// path, one differing only in letter case is taken (skills written for
// case-insensitive systems name "REFERENCE.md" for reference.md). An
// unknown path is an error listing the folder's files. Binary files are
// refused; text over MaxFileBytes is cut, and truncated says so.
func (s *Store) ReadFile(ctx context.Context, name, rel string) (text, resolved string, truncated bool, err error) {
	dir, err := s.FolderDir(ctx, name)
	if err != nil {
		return "", "", false, err
	}
	clean := path.Clean(strings.ReplaceAll(strings.TrimSpace(rel), `\`, "/"))
	if clean == "." || clean == "" || !fs.ValidPath(clean) {
		return "", "", false, fmt.Errorf("path %q: give a path inside the skill's folder, like scripts/run.py (no leading /, no ..)", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", "", false, fmt.Errorf("open skill folder %s: %w", name, err)
	}
	defer root.Close()
	files := folderFiles(root.FS())
	if !slices.Contains(files, clean) {
		i := slices.IndexFunc(files, func(f string) bool { return strings.EqualFold(f, clean) })
		if i < 0 {
			return "", "", false, fmt.Errorf("skill %s has no file %q; its files: %s", name, clean, listFiles(files))
		}
		clean = files[i]
	}
	f, err := root.Open(clean)
	if err != nil {
		return "", "", false, fmt.Errorf("read %s of skill %s: %w", clean, name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", "", false, fmt.Errorf("read %s of skill %s: %w", clean, name, err)
	}
	if len(data) > MaxFileBytes {
		data, truncated = data[:MaxFileBytes], true
		for len(data) > 0 && !utf8.Valid(data) { // a rune cut in two
			data = data[:len(data)-1]
		}
	}
	if !utf8.Valid(data) || slices.Contains(data, 0) {
		return "", "", false, fmt.Errorf("%s of skill %s is not text: run it with execute_shell instead", clean, name)
	}
	return string(data), clean, truncated, nil
}

// folderFiles lists the regular files of a skill folder, slash-separated
// and sorted, hidden files and folders left out.
func folderFiles(fsys fs.FS) []string {
	var out []string
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		if len(out) >= 1000 {
			return fs.SkipAll
		}
		return nil
	})
	return out
}

func listFiles(files []string) string {
	if len(files) > maxListed {
		return strings.Join(files[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(files)-maxListed)
	}
	return strings.Join(files, ", ")
}

// errFolder is the error of a write to folder skill sk.
func errFolder(sk Skill) error {
	return fmt.Errorf("%w: %s is %s, written by hand or copied from a skills repository; change its files directly, or save under another name",
		ErrFolder, sk.Name, sk.Path())
}

// folderSkill returns the folder skill called exactly n, if there is one.
func (s *Store) folderSkill(ctx context.Context, n string) (Skill, bool) {
	sk, err := s.Get(ctx, n)
	if err != nil || !sk.Folder || sk.Name != n {
		return Skill{}, false
	}
	return sk, true
}

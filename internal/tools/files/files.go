// Package files implements the workspace file operations behind the
// read_file, write_file and apply_patch tools. Every path goes through a
// workspace.Workspace, so nothing outside the workspace can be read or
// written. Writes are atomic per file (temporary file and rename), and a
// patch is all-or-nothing across the files it touches.
//
// A Files value is safe for concurrent use; concurrent writers of the same
// file race as they would on any file system (last rename wins).
package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/tools/workspace"
)

// Limits bound what the file operations read and write. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxFileBytes is the largest file read_file and apply_patch will open
	// and the largest file write_file and apply_patch will produce.
	MaxFileBytes int64
	// MaxOutputChars caps the text one read_file call returns.
	MaxOutputChars int
	// DefaultLines is how many lines read_file returns without a limit.
	DefaultLines int
	// MaxLineChars truncates longer lines in read_file output.
	MaxLineChars int
}

// DefaultLimits are used for zero Limits fields.
var DefaultLimits = Limits{
	MaxFileBytes:   10 << 20,
	MaxOutputChars: 100_000,
	DefaultLines:   2000,
	MaxLineChars:   2000,
}

// ErrBinary is returned (wrapped) when a text operation meets binary data.
var ErrBinary = errors.New("binary file")

// Files performs file operations inside one workspace.
type Files struct {
	ws  *workspace.Workspace
	lim Limits
}

// New returns the file operations for ws.
func New(ws *workspace.Workspace, lim Limits) *Files {
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	if lim.MaxOutputChars <= 0 {
		lim.MaxOutputChars = DefaultLimits.MaxOutputChars
	}
	if lim.DefaultLines <= 0 {
		lim.DefaultLines = DefaultLimits.DefaultLines
	}
	if lim.MaxLineChars <= 0 {
		lim.MaxLineChars = DefaultLimits.MaxLineChars
	}
	return &Files{ws: ws, lim: lim}
}

// ReadArgs are the arguments of read_file.
type ReadArgs struct {
	Path   string `json:"path" jsonschema:"file path relative to the workspace (or absolute inside it); a directory lists its entries"`
	Offset int    `json:"offset,omitempty" jsonschema:"1-based line number to start reading at (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"maximum number of lines to return (default 2000)"`
}

// ReadResult is what read_file returns.
type ReadResult struct {
	Path string `json:"path"`
	// Content holds the lines, each prefixed with its number and a tab; for a
	// directory, one entry per line with "/" after subdirectories.
	Content    string `json:"content"`
	StartLine  int    `json:"start_line,omitempty"`
	EndLine    int    `json:"end_line,omitempty"`
	TotalLines int    `json:"total_lines"`
	// NextOffset is the offset to pass to continue reading (0 at the end).
	NextOffset int  `json:"next_offset,omitempty"`
	Truncated  bool `json:"truncated,omitempty"`
	IsDir      bool `json:"is_dir,omitempty"`
}

const maxDirEntries = 1000

// Read returns a line-numbered window of a text file, or a directory listing.
func (f *Files) Read(ctx context.Context, a ReadArgs) (ReadResult, error) {
	rel, err := f.ws.Rel(a.Path)
	if err != nil {
		return ReadResult{}, err
	}
	info, err := f.ws.Stat(rel)
	if err != nil {
		return ReadResult{}, fmt.Errorf("read %s: %w", rel, err)
	}
	if info.IsDir() {
		return f.list(rel)
	}
	if !info.Mode().IsRegular() {
		return ReadResult{}, fmt.Errorf("read %s: not a regular file (%s)", rel, info.Mode().Type())
	}
	if info.Size() > f.lim.MaxFileBytes {
		return ReadResult{}, fmt.Errorf("read %s: file is %d bytes, over the %d-byte limit; use execute_shell with head, sed or grep", rel, info.Size(), f.lim.MaxFileBytes)
	}
	if a.Offset < 0 || a.Limit < 0 {
		return ReadResult{}, errors.New("offset and limit must not be negative")
	}
	offset := max(a.Offset, 1)
	limit := a.Limit
	if limit == 0 {
		limit = f.lim.DefaultLines
	}
	file, err := f.ws.Open(rel)
	if err != nil {
		return ReadResult{}, fmt.Errorf("read %s: %w", rel, err)
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, 64<<10)
	head, _ := br.Peek(8 << 10)
	if looksBinary(head) {
		return ReadResult{}, fmt.Errorf("read %s: %w (%d bytes); read_file returns text only", rel, ErrBinary, info.Size())
	}
	res := ReadResult{Path: rel}
	var out strings.Builder
	n := 0
	for {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return ReadResult{}, err
			}
		}
		line, err := br.ReadString('\n')
		if line == "" && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return ReadResult{}, fmt.Errorf("read %s: %w", rel, err)
		}
		n++
		if n < offset || res.NextOffset != 0 {
			continue
		}
		if n >= offset+limit {
			res.NextOffset = n
			continue
		}
		line = strings.TrimRight(line, "\r\n")
		if utf8.RuneCountInString(line) > f.lim.MaxLineChars {
			line = string([]rune(line)[:f.lim.MaxLineChars]) + " … [line truncated]"
		}
		entry := fmt.Sprintf("%6d\t%s\n", n, line)
		if out.Len()+len(entry) > f.lim.MaxOutputChars && res.StartLine != 0 {
			res.NextOffset = n
			res.Truncated = true
			continue
		}
		if res.StartLine == 0 {
			res.StartLine = n
		}
		res.EndLine = n
		out.WriteString(entry)
	}
	res.TotalLines = n
	if offset > 1 && offset > n {
		return ReadResult{}, fmt.Errorf("read %s: offset %d is past the end of the file (%d lines)", rel, offset, n)
	}
	res.Content = out.String()
	return res, nil
}

func (f *Files) list(rel string) (ReadResult, error) {
	entries, err := f.ws.ReadDir(rel)
	if err != nil {
		return ReadResult{}, fmt.Errorf("list %s: %w", rel, err)
	}
	var b strings.Builder
	res := ReadResult{Path: rel, IsDir: true, TotalLines: len(entries)}
	for i, e := range entries {
		if i == maxDirEntries {
			res.Truncated = true
			fmt.Fprintf(&b, "… %d more entries\n", len(entries)-maxDirEntries)
			break
		}
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	res.Content = b.String()
	return res, nil
}

// looksBinary reports whether data (the start of a file) is not text: it
// holds a NUL byte or is not valid UTF-8 (ignoring a rune cut at the end).
func looksBinary(data []byte) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
		data = data[:len(data)-1]
	}
	return !utf8.Valid(data)
}

// WriteArgs are the arguments of write_file.
type WriteArgs struct {
	Path    string `json:"path" jsonschema:"file path relative to the workspace (or absolute inside it); parent directories are created"`
	Content string `json:"content" jsonschema:"the text to write"`
	Append  bool   `json:"append,omitempty" jsonschema:"append to the file instead of replacing it (default false)"`
}

// WriteResult is what write_file returns.
type WriteResult struct {
	Path string `json:"path"`
	// Bytes is the size of the file after the write.
	Bytes   int64 `json:"bytes"`
	Created bool  `json:"created"`
}

// Write replaces, creates or appends to a file, atomically.
func (f *Files) Write(ctx context.Context, a WriteArgs) (WriteResult, error) {
	rel, err := f.ws.Rel(a.Path)
	if err != nil {
		return WriteResult{}, err
	}
	if int64(len(a.Content)) > f.lim.MaxFileBytes {
		return WriteResult{}, fmt.Errorf("write %s: content is %d bytes, over the %d-byte limit", rel, len(a.Content), f.lim.MaxFileBytes)
	}
	data := []byte(a.Content)
	created := false
	info, err := f.ws.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return WriteResult{}, fmt.Errorf("write %s: %w", rel, err)
	case info.IsDir():
		return WriteResult{}, fmt.Errorf("write %s: is a directory", rel)
	case a.Append:
		if info.Size()+int64(len(data)) > f.lim.MaxFileBytes {
			return WriteResult{}, fmt.Errorf("write %s: the file would grow to %d bytes, over the %d-byte limit", rel, info.Size()+int64(len(data)), f.lim.MaxFileBytes)
		}
		old, err := f.ws.ReadFile(rel)
		if err != nil {
			return WriteResult{}, fmt.Errorf("write %s: read for append: %w", rel, err)
		}
		data = append(old, data...)
	}
	if err := ctx.Err(); err != nil {
		return WriteResult{}, err
	}
	if err := f.ws.WriteFileAtomic(rel, data, 0o644); err != nil {
		return WriteResult{}, fmt.Errorf("write %s: %w", rel, err)
	}
	return WriteResult{Path: rel, Bytes: int64(len(data)), Created: created}, nil
}

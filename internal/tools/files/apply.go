package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/reverie-ai/reverie/internal/tools/patch"
)

// PatchArgs are the arguments of apply_patch.
type PatchArgs struct {
	Patch string `json:"patch" jsonschema:"the whole patch, from '*** Begin Patch' to '*** End Patch'"`
}

// Change is one file changed by a patch.
type Change struct {
	Path string `json:"path"`
	// Action is "added", "updated", "moved" or "deleted".
	Action  string `json:"action"`
	MovedTo string `json:"moved_to,omitempty"`
}

// PatchResult is what apply_patch returns.
type PatchResult struct {
	Changes []Change `json:"changes"`
}

// step is one prepared file operation with its undo.
type step struct {
	change Change
	do     func() error
	undo   func() error
}

// ApplyPatch parses and applies a patch. Every operation is checked and
// computed before anything is written; if a write then fails, the writes
// already made are undone, so the workspace ends as it was.
func (f *Files) ApplyPatch(ctx context.Context, a PatchArgs) (PatchResult, error) {
	p, err := patch.Parse(a.Patch)
	if err != nil {
		return PatchResult{}, err
	}
	steps := make([]step, 0, len(p.Ops))
	touched := map[string]string{} // workspace path → the patch path naming it
	for _, op := range p.Ops {
		s, err := f.prepare(op)
		if err == nil {
			for _, path := range []string{s.change.Path, s.change.MovedTo} {
				if prev, dup := touched[path]; dup && path != "" {
					err = fmt.Errorf("%s is already changed by this patch (as %s)", path, prev)
					break
				}
				touched[path] = op.Path
			}
		}
		if err != nil {
			return PatchResult{}, fmt.Errorf("%s File %s (patch line %d): %w; nothing was changed", opTitle(op.Kind), op.Path, op.Line, err)
		}
		steps = append(steps, s)
	}
	if err := ctx.Err(); err != nil {
		return PatchResult{}, err
	}
	var res PatchResult
	for i, s := range steps {
		if err := s.do(); err != nil {
			var undoErrs []error
			for j := i - 1; j >= 0; j-- {
				if uerr := steps[j].undo(); uerr != nil {
					undoErrs = append(undoErrs, fmt.Errorf("undo %s %s: %w", steps[j].change.Action, steps[j].change.Path, uerr))
				}
			}
			if len(undoErrs) > 0 {
				return PatchResult{}, fmt.Errorf("%s %s: %w; rolling back earlier changes also failed: %w", s.change.Action, s.change.Path, err, errors.Join(undoErrs...))
			}
			return PatchResult{}, fmt.Errorf("%s %s: %w; earlier changes of this patch were rolled back", s.change.Action, s.change.Path, err)
		}
		res.Changes = append(res.Changes, s.change)
	}
	return res, nil
}

func opTitle(k patch.Kind) string {
	switch k {
	case patch.Add:
		return "Add"
	case patch.Delete:
		return "Delete"
	default:
		return "Update"
	}
}

// prepare validates op against the workspace and computes its effect.
func (f *Files) prepare(op patch.Op) (step, error) {
	rel, err := f.ws.Rel(op.Path)
	if err != nil {
		return step{}, err
	}
	switch op.Kind {
	case patch.Add:
		if _, err := f.ws.Stat(rel); err == nil {
			return step{}, errors.New("the file already exists (use Update File to change it)")
		} else if !errors.Is(err, fs.ErrNotExist) {
			return step{}, err
		}
		if int64(len(op.Content)) > f.lim.MaxFileBytes {
			return step{}, fmt.Errorf("content is %d bytes, over the %d-byte limit", len(op.Content), f.lim.MaxFileBytes)
		}
		data := []byte(op.Content)
		return step{
			change: Change{Path: rel, Action: "added"},
			do:     func() error { return f.ws.WriteFileAtomic(rel, data, 0o644) },
			undo:   func() error { return f.ws.Remove(rel) },
		}, nil
	case patch.Delete:
		old, mode, err := f.readExisting(rel)
		if err != nil {
			return step{}, err
		}
		return step{
			change: Change{Path: rel, Action: "deleted"},
			do:     func() error { return f.ws.Remove(rel) },
			undo:   func() error { return f.ws.WriteFileAtomic(rel, old, mode) },
		}, nil
	case patch.Update:
		old, mode, err := f.readExisting(rel)
		if err != nil {
			return step{}, err
		}
		if looksBinary(old) {
			return step{}, ErrBinary
		}
		updated := string(old)
		if len(op.Hunks) > 0 {
			if updated, err = patch.Apply(updated, op.Hunks); err != nil {
				return step{}, err
			}
		}
		if int64(len(updated)) > f.lim.MaxFileBytes {
			return step{}, fmt.Errorf("the result would be %d bytes, over the %d-byte limit", len(updated), f.lim.MaxFileBytes)
		}
		newData := []byte(updated)
		if op.MoveTo == "" {
			return step{
				change: Change{Path: rel, Action: "updated"},
				do:     func() error { return f.ws.WriteFileAtomic(rel, newData, mode) },
				undo:   func() error { return f.ws.WriteFileAtomic(rel, old, mode) },
			}, nil
		}
		dest, err := f.ws.Rel(op.MoveTo)
		if err != nil {
			return step{}, fmt.Errorf("move to: %w", err)
		}
		if dest == rel {
			return step{}, errors.New("Move to names the file itself")
		}
		if _, err := f.ws.Stat(dest); err == nil {
			return step{}, fmt.Errorf("cannot move to %s: it already exists", dest)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return step{}, err
		}
		return step{
			change: Change{Path: rel, Action: "moved", MovedTo: dest},
			do: func() error {
				if err := f.ws.WriteFileAtomic(dest, newData, mode); err != nil {
					return err
				}
				if err := f.ws.Remove(rel); err != nil {
					_ = f.ws.Remove(dest)
					return err
				}
				return nil
			},
			undo: func() error {
				if err := f.ws.WriteFileAtomic(rel, old, mode); err != nil {
					return err
				}
				return f.ws.Remove(dest)
			},
		}, nil
	}
	return step{}, fmt.Errorf("unknown operation %q", op.Kind)
}

// readExisting reads a regular file that must exist, within the size limit.
func (f *Files) readExisting(rel string) ([]byte, fs.FileMode, error) {
	info, err := f.ws.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, errors.New("the file does not exist")
	}
	if err != nil {
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, errors.New("not a regular file")
	}
	if info.Size() > f.lim.MaxFileBytes {
		return nil, 0, fmt.Errorf("file is %d bytes, over the %d-byte limit", info.Size(), f.lim.MaxFileBytes)
	}
	data, err := f.ws.ReadFile(rel)
	if err != nil {
		return nil, 0, err
	}
	return data, info.Mode().Perm(), nil
}

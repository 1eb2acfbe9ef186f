package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/skills"
)

// apiSkills serves skills/*.md from the skills store.
type apiSkills struct{ s *skills.Store }

func skillError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, skills.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, skills.ErrFolder):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, skills.ErrInvalidName), errors.Is(err, skills.ErrEmpty), errors.Is(err, skills.ErrTooLong),
		errors.Is(err, skills.ErrSecret):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func skillOf(s skills.Skill) api.Skill {
	return api.Skill{Name: s.Name, Summary: s.Summary, Content: s.Body, Chars: s.Chars, UpdatedAt: s.Modified, Folder: s.Folder}
}

func (s apiSkills) List(ctx context.Context) ([]api.Skill, error) {
	list, err := s.s.List(ctx)
	if err != nil {
		return nil, skillError(err)
	}
	out := make([]api.Skill, len(list))
	for i, sk := range list {
		out[i] = skillOf(sk)
	}
	return out, nil
}

func (s apiSkills) Get(ctx context.Context, name string) (api.Skill, error) {
	sk, err := s.s.Get(ctx, name)
	if err != nil {
		return api.Skill{}, skillError(err)
	}
	return skillOf(sk), nil
}

func (s apiSkills) Put(ctx context.Context, name, content string) (api.Skill, error) {
	if _, err := s.s.Save(ctx, name, content); err != nil {
		return api.Skill{}, skillError(err)
	}
	return s.Get(ctx, name)
}

func (s apiSkills) Delete(ctx context.Context, name string) error {
	return skillError(s.s.Delete(ctx, name))
}

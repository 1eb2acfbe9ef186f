package api

import (
	"context"
	"time"
)

// Dreams reads the reports of the nightly consolidation and reverts one.
type Dreams interface {
	// List returns the newest limit dreams, newest first.
	List(ctx context.Context, limit int) ([]Dream, error)
	// Revert undoes every change dream id made (memories reopened or
	// deleted, pulse items and files put back). ErrNotFound for an unknown
	// id, ErrConflict when it was already reverted, ErrBusy while a dream
	// runs.
	Revert(ctx context.Context, id int64) (DreamRevert, error)
	// Dream consolidates now (trigger says who asked: "cli", "api") and
	// returns the report. ErrBusy while a dream runs, ErrConflict
	// when no language model is configured.
	Dream(ctx context.Context, trigger string) (Dream, error)
}

// Dream is the report of one consolidation: GET /api/v1/dreams.
type Dream struct {
	ID         int64            `json:"id"`
	Trigger    string           `json:"trigger"`
	Started    time.Time        `json:"started"`
	Finished   time.Time        `json:"finished"`
	Components []DreamComponent `json:"components"`
	ModelCalls int              `json:"model_calls"`
	Usage      Usage            `json:"usage"`
	// Revision is the data dir history's change holding the dream's file
	// changes ("" when none).
	Revision string `json:"revision,omitempty"`
	// Changes is the number of changes the dream made, which a revert
	// puts back (0: it changed nothing, there is nothing to undo).
	Changes  int  `json:"changes"`
	Reverted bool `json:"reverted"`
}

// DreamComponent is what a dream did to one component (memories, pulse,
// skills, tasks): Status is ok, skipped, refused or failed; Lines say
// each change.
type DreamComponent struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Detail string   `json:"detail,omitempty"`
	Lines  []string `json:"lines"`
}

// DreamList is GET /api/v1/dreams.
type DreamList struct {
	Dreams []Dream `json:"dreams"`
}

// DreamRevert is the answer to POST /api/v1/dreams/{id}/revert.
type DreamRevert struct {
	ID int64 `json:"id"`
	// Undone is the number of changes put back.
	Undone int `json:"undone"`
}

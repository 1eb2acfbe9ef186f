package embed

import (
	"fmt"
	"io/fs"
)

func fsSub() (fs.FS, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("embedding cache migrations: %w", err)
	}
	return sub, nil
}

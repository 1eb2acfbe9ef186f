package sqlite

import (
	"context"
	"database/sql"

	"github.com/reverie-ai/reverie/extension"
)

// The row helpers live in the extension package, so that extensions (which
// may not import internal packages) loop over rows the same way; these are
// their names here.
type (
	// Scanner is extension.Scanner.
	Scanner = extension.Scanner
	// Querier is extension.Querier.
	Querier = extension.Querier
)

// Each is extension.Each.
func Each(ctx context.Context, q Querier, fn func(*sql.Rows) error, query string, args ...any) error {
	return extension.Each(ctx, q, fn, query, args...)
}

// Rows is extension.Rows.
func Rows[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	return extension.Rows(ctx, q, scan, query, args...)
}

// Scan1 is extension.Scan1.
func Scan1[T any](row Scanner) (T, error) { return extension.Scan1[T](row) }

package extension

import (
	"context"
	"database/sql"
)

// Scanner is a row to scan: *sql.Row and *sql.Rows are one, so a scan
// function written against it serves QueryRow and Rows alike.
type Scanner interface{ Scan(dest ...any) error }

// Querier runs a query: *sql.DB, *sql.Tx and *sql.Conn all are one.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Each runs query and calls fn for every row, in order. It closes the rows
// whatever happens and returns the first error of the query, of fn (which
// stops the loop) or of the iteration (rows.Err), unwrapped: the caller
// says what it was doing.
func Each(ctx context.Context, q Querier, fn func(*sql.Rows) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Rows runs query and returns its rows, each made by scan, in order (nil
// when there are none). Errors are as Each's.
func Rows[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	var out []T
	err := Each(ctx, q, func(rows *sql.Rows) error {
		v, err := scan(rows)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Scan1 is a scan function for Rows that reads a single column.
func Scan1[T any](row Scanner) (T, error) {
	var v T
	err := row.Scan(&v)
	return v, err
}

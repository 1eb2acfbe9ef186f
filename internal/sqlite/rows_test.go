package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestRows(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')`); err != nil {
		t.Fatal(err)
	}
	type row struct {
		id   int64
		name string
	}
	scanRow := func(rows Scanner) (row, error) {
		var r row
		err := rows.Scan(&r.id, &r.name)
		return r, err
	}
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name    string
		query   string
		args    []any
		scan    func(Scanner) (row, error)
		want    []row
		wantErr string
	}{
		{name: "rows in order", query: `SELECT id, name FROM t WHERE id >= ? ORDER BY id DESC`, args: []any{2},
			scan: scanRow, want: []row{{3, "c"}, {2, "b"}}},
		{name: "no rows is nil", query: `SELECT id, name FROM t WHERE id > 9`, scan: scanRow},
		{name: "query error", query: `SELECT id, name FROM missing`, scan: scanRow, wantErr: "no such table"},
		{name: "scan error stops", query: `SELECT id, name FROM t ORDER BY id`, wantErr: "stop",
			scan: func(rows Scanner) (row, error) {
				r, err := scanRow(rows)
				if r.id == 2 {
					return r, errStop
				}
				return r, err
			}},
		{name: "wrong column count", query: `SELECT id FROM t`, scan: scanRow, wantErr: "expected 1 destination"},
		{name: "error while stepping (rows.Err)", scan: scanRow, wantErr: "overflow",
			query: `SELECT 1, 'x' UNION ALL SELECT abs(-9223372036854775807 - 1), 'y'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rows(ctx, db, tc.scan, tc.query, tc.args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Rows: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Rows error = %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "" && got != nil:
				t.Errorf("Rows returned %v with its error", got)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Rows = %v, want %v", got, tc.want)
			}
			if tc.want == nil && got != nil {
				t.Errorf("Rows = %#v, want nil", got)
			}
			if n := db.Stats().InUse; n != 0 {
				t.Errorf("%d connections still in use: the rows were not closed", n)
			}
		})
	}
}

func TestEachInTransaction(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	var sum int64
	err := Tx(ctx, db, func(tx *sql.Tx) error {
		return Each(ctx, tx, func(rows *sql.Rows) error {
			n, err := Scan1[int64](rows)
			sum += n
			return err
		}, `SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3`)
	})
	if err != nil || sum != 6 {
		t.Fatalf("Each in a transaction: sum %d, %v; want 6, nil", sum, err)
	}
}

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

//go:embed schema.sql
var schemaSQL string

// migrations[i] brings a database from user_version i to i+1.
var migrations = mustParseMigrations(schemaSQL)

// ErrSchemaTooNew is returned by Open for a database written by a newer zeroclaw.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this program")

const migrationMarker = "-- +migration "

// parseMigrations splits schema.sql at its "-- +migration N: …" lines. The numbers
// must count up from 1 with no gap, so that a section cannot be lost or reordered by
// an edit without the package failing to start (and its tests failing first).
func parseMigrations(text string) ([]string, error) {
	var out []string
	var cur *strings.Builder
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, migrationMarker); ok {
			num, _, _ := strings.Cut(rest, ":")
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if err != nil || n != len(out)+1 {
				return nil, fmt.Errorf("schema.sql: migration header %q: want number %d", strings.TrimSpace(line), len(out)+1)
			}
			out = append(out, "")
			cur = &strings.Builder{}
		}
		if cur != nil {
			cur.WriteString(line)
			out[len(out)-1] = cur.String()
		}
	}
	if len(out) == 0 {
		return nil, errors.New("schema.sql: no migrations")
	}
	return out, nil
}

func mustParseMigrations(text string) []string {
	m, err := parseMigrations(text)
	if err != nil {
		panic(err)
	}
	return m
}

// SchemaVersion is the user_version this program writes.
func SchemaVersion() int { return len(migrations) }

// migrate applies the migrations after the database's user_version, up to target,
// each in its own transaction together with the new user_version, so a failure
// leaves the database at the last version that completed. db must be the writer
// (BEGIN IMMEDIATE): two processes opening one file cannot both apply a migration.
func migrate(ctx context.Context, db *sql.DB, path string, target int) error {
	for {
		done, err := migrateOne(ctx, db, path, target)
		if err != nil || done {
			return err
		}
	}
}

// A migration runs with foreign keys off, the way SQLite's documentation rebuilds a
// table: dropping a parent table with them on would delete its children's rows
// (ON DELETE CASCADE). Before it commits, every foreign key is checked.
func migrateOne(ctx context.Context, db *sql.DB, path string, target int) (done bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("store: migrating %s: %w", path, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return false, fmt.Errorf("store: migrating %s: %w", path, err)
	}
	defer func() {
		if _, e := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON"); e != nil && err == nil {
			// The connection would go on without its constraints: drop it.
			conn.Raw(func(any) error { return driver.ErrBadConn })
			err = fmt.Errorf("store: migrating %s: turning foreign keys back on: %w", path, e)
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: migrating %s: %w", path, err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, fmt.Errorf("store: reading the schema version of %s: %w", path, err)
	}
	switch {
	case version > len(migrations):
		return false, fmt.Errorf("%w: %s has schema version %d, this zeroclaw knows up to %d; run a newer zeroclaw or move the file aside",
			ErrSchemaTooNew, path, version, len(migrations))
	case version >= target:
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("store: migrating %s to schema version %d: %w", path, version+1, err)
	}
	if err := foreignKeyCheck(ctx, tx); err != nil {
		return false, fmt.Errorf("store: migrating %s to schema version %d: %w", path, version+1, err)
	}
	// PRAGMA takes no parameters; the value is an int we formatted ourselves.
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(version+1)); err != nil {
		return false, fmt.Errorf("store: recording schema version %d in %s: %w", version+1, path, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: migrating %s to schema version %d: %w", path, version+1, err)
	}
	return version+1 >= target, nil
}

// foreignKeyCheck fails when a row references a parent row that does not exist.
func foreignKeyCheck(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("a row of %s (rowid %v) references a missing row of %s", table, rowid.Int64, parent)
	}
	return rows.Err()
}

// Package sqlschema installs, upgrades and removes the pgjobs SQL schema of a database.
//
// The schema is a series of versions, each one or more files sql/NNN_*.sql (NNN the version,
// files of a version applied in name order), embedded in the binary. Install applies them all in
// one transaction and records the version in pgjobs.pgj_version_; Upgrade applies the versions
// an installed schema lacks; Uninstall removes the schema and gives the database back its
// search_path setting.
package sqlschema

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/printable"
)

//go:embed sql/*.sql queries/*.sql
var files embed.FS

// Schema is the name of the schema pgjobs installs.
const Schema = "pgjobs"

// ErrNotEnabled means the database has no pgjobs schema.
var ErrNotEnabled = errors.New("pgjobs is not enabled in this database")

// ErrAlreadyEnabled means the database already has a pgjobs schema.
var ErrAlreadyEnabled = errors.New("pgjobs is already enabled in this database")

// VersionError means the installed schema is of another version than this program understands.
type VersionError struct {
	Installed, Known int
}

func (e *VersionError) Error() string {
	if e.Installed < e.Known {
		return fmt.Sprintf("the pgjobs schema is version %d, older than version %d of this program: upgrade it with pgjobs updatesystem -v %[2]d.00", e.Installed, e.Known)
	}
	return fmt.Sprintf("the pgjobs schema is version %d, newer than version %d of this program: install a newer pgjobs", e.Installed, e.Known)
}

// version is one schema version and its files in order.
type version struct {
	number int
	files  []string
}

// versions returns the embedded schema versions in order.
func versions() ([]version, error) {
	names, err := fs.Glob(files, "sql/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []version
	for _, name := range names {
		prefix, _, ok := strings.Cut(path.Base(name), "_")
		n, err := strconv.Atoi(prefix)
		if !ok || err != nil || n < 1 {
			return nil, fmt.Errorf("schema file %s: want a name NNN_what.sql", name)
		}
		if len(out) == 0 || out[len(out)-1].number != n {
			if n != len(out)+1 {
				return nil, fmt.Errorf("schema file %s: version %d follows version %d", name, n, len(out))
			}
			out = append(out, version{number: n})
		}
		out[len(out)-1].files = append(out[len(out)-1].files, name)
	}
	return out, nil
}

// Latest returns the newest schema version this program carries.
func Latest() int {
	vs, err := versions()
	if err != nil || len(vs) == 0 {
		panic(fmt.Sprintf("sqlschema: embedded schema files are broken: %v", err)) // a build defect, caught by the tests
	}
	return vs[len(vs)-1].number
}

// query returns the text of an embedded query file queries/NAME.sql.
func query(name string) string {
	data, err := files.ReadFile("queries/" + name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("sqlschema: no query %s: %v", name, err)) // a build defect, caught by the tests
	}
	return string(data)
}

// DB is what pgjobs' SQL runs on: a *pgx.Conn, a pgx.Tx or a *pgxpool.Pool. Install, Upgrade and
// Uninstall run in a transaction of their own (Begin), or in a savepoint of the caller's
// transaction, which can then roll them back together with its other work.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Installed returns the installed schema version, and ErrNotEnabled when there is no pgjobs schema.
func Installed(ctx context.Context, q DB) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, query("schema_exists")).Scan(&exists); err != nil {
		return 0, fmt.Errorf("look for the pgjobs schema: %w", err)
	}
	if !exists {
		return 0, ErrNotEnabled
	}
	var v int
	if err := q.QueryRow(ctx, query("version_get")).Scan(&v); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege: before version 3
			return 0, fmt.Errorf("read the pgjobs schema version: %w; the schema is older than version 3, whose version only a superuser may read: a superuser upgrades it with pgjobs updatesystem -v %d.00", err, Latest())
		}
		return 0, fmt.Errorf("read the pgjobs schema version: %w", err)
	}
	return v, nil
}

// Check returns nil when the database has the schema version this program carries, and else
// ErrNotEnabled or a *VersionError saying what to do.
func Check(ctx context.Context, q DB) error {
	v, err := Installed(ctx, q)
	if err != nil {
		return err
	}
	if v != Latest() {
		return &VersionError{Installed: v, Known: Latest()}
	}
	return nil
}

// InstallVersion installs the schema as version n of it was, in one transaction, and adds it to
// the database's search_path: for the tests of upgrades from an older version (pgjobs itself
// installs only the latest, with Install).
func InstallVersion(ctx context.Context, db DB, n int) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return installTo(ctx, tx, n) })
}

// Install creates the pgjobs schema, at the latest version, in one transaction, and adds it to
// the database's search_path. It fails with ErrAlreadyEnabled, changing nothing, when the
// database has a pgjobs schema.
func Install(ctx context.Context, db DB) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := Installed(ctx, tx); err == nil {
			return ErrAlreadyEnabled
		} else if !errors.Is(err, ErrNotEnabled) {
			return err
		}
		return installTo(ctx, tx, Latest())
	})
}

// installTo applies the files of versions 1 to n in tx and records version n.
func installTo(ctx context.Context, tx pgx.Tx, n int) error {
	vs, err := versions()
	if err != nil {
		return err
	}
	if n < 1 || n > len(vs) {
		return fmt.Errorf("install schema version %d: this pgjobs knows versions 1 to %d", n, len(vs))
	}
	for _, v := range vs[:n] {
		if err := apply(ctx, tx, v); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, query("install_finish"), n); err != nil {
		return fmt.Errorf("record schema version %d: %w", n, err)
	}
	return nil
}

// Upgrade brings an installed schema to the latest version in one transaction and returns the
// versions before and after.
func Upgrade(ctx context.Context, db DB) (from, to int, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// whatever the database's or the role's settings: a database owner may set a statement
		// timeout, read-only transactions or a search_path, which the versions must not depend on
		if _, err := tx.Exec(ctx, query("upgrade_settings")); err != nil {
			return fmt.Errorf("set the upgrade's settings: %w", err)
		}
		if _, err := Installed(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, query("version_lock")); err != nil {
			return fmt.Errorf("lock the schema version: %w", err)
		}
		if from, err = Installed(ctx, tx); err != nil { // again: another upgrade may have run meanwhile
			return err
		}
		to = from
		if from > Latest() {
			return &VersionError{Installed: from, Known: Latest()}
		}
		vs, err := versions()
		if err != nil {
			return err
		}
		for _, v := range vs[from:] {
			if err := apply(ctx, tx, v); err != nil {
				return err
			}
			to = v.number
		}
		if to != from {
			if _, err := tx.Exec(ctx, query("version_set"), to); err != nil {
				return fmt.Errorf("record schema version %d: %w", to, err)
			}
		}
		return nil
	})
	return from, to, err
}

// Uninstall drops the pgjobs schema with everything in it, and the roles' schemas of the views of
// job calls (pgjobs_call_<role OID>) and pgjobs_gone, and gives the database back the
// search_path setting it had before Install, in one transaction. It fails with ErrNotEnabled
// when there is no schema.
func Uninstall(ctx context.Context, db DB) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		v, err := Installed(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, query("uninstall_settings")); err != nil {
			return fmt.Errorf("set the uninstall's settings: %w", err)
		}
		if err := noOutsideDependents(ctx, tx); err != nil {
			return uninstallError("drop the pgjobs schema", err)
		}
		if _, err := tx.Exec(ctx, query("uninstall")); err != nil {
			return uninstallError("drop the pgjobs schema", err)
		}
		if v >= agentSchemaSince { // before, a schema of that name is not pgjobs'
			if _, err := tx.Exec(ctx, query("uninstall_agent")); err != nil {
				return uninstallError("drop the pgjobs_agent schema", err)
			}
		}
		if v >= setAsideSince { // before, a schema of that name is not pgjobs'; first: its views read tables of the call schemas
			if _, err := tx.Exec(ctx, query("uninstall_gone")); err != nil {
				return uninstallError("drop the views of former job calls set aside (pgjobs_gone)", err)
			}
		}
		if v >= callSchemasSince { // before, schemas of those names are not pgjobs'
			if _, err := tx.Exec(ctx, query("uninstall_calls")); err != nil {
				return uninstallError("drop the schemas of the job calls' views", err)
			}
		}
		return nil
	})
}

// uninstallError wraps err, the failure of the uninstall's step what. When objects depend by OID on
// what the step drops (a column default '<OID>'::regclass naming a call view, a column of a view's
// row type), PostgreSQL's detail names them and its hint says to DROP ... CASCADE, which would drop
// what roles made: the hint says instead what the DBA can do. The uninstall is one transaction, so
// nothing was changed.
func uninstallError(what string, err error) error {
	if pgErr, ok := err.(*pgconn.PgError); ok && pgErr.Code == "55P03" { // lock_timeout of uninstall_settings
		hinted := *pgErr
		hinted.Hint = "Nothing was changed. A session or a prepared transaction holds a lock on pgjobs' objects (pg_locks and pg_prepared_xacts show it): end it, or COMMIT PREPARED or ROLLBACK PREPARED it, then disable the database again."
		return fmt.Errorf("%s: %w", what, &hinted)
	}
	return fmt.Errorf("%s: %w", what, dependentsHinted(err, "disable the database again"))
}

// DetailByLine marks, as the Routine of a PgError, an error pgjobs made whose DETAIL has one
// printable item a line: PostgreSQL's own DETAIL may hold a role's name with a line break.
const DetailByLine = "pgjobs: one item a line"

// maxDependentsNamed bounds the objects a refused uninstall names, as PostgreSQL's DETAIL does.
const maxDependentsNamed = 100

// noOutsideDependents refuses the uninstall, as PostgreSQL refuses a DROP without CASCADE
// (SQLSTATE 2BP01, its detail naming them), while objects made outside pgjobs depend on what it
// drops with CASCADE (the pgjobs and pgjobs_agent schemas: a role's column of a pgjobs view's row
// type, a check calling a pgjobs function, a view over pgjobs' views would go with them) or on the
// views and tables of job calls it drops by name (by OID: a column default '<OID>'::regclass).
func noOutsideDependents(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, query("uninstall_dependents"), maxDependentsNamed)
	if err != nil {
		return fmt.Errorf("look for objects depending on pgjobs: %w", err)
	}
	var named []string
	total := 0
	for rows.Next() {
		var what string
		if err := rows.Scan(&what, &total); err != nil {
			return fmt.Errorf("look for objects depending on pgjobs: %w", err)
		}
		// one a line, its names (a role's, unquoted for a column or a constraint) printable: a line
		// break in one must not add a line that reads as another object
		named = append(named, printable.String(what)+" depends on pgjobs")
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("look for objects depending on pgjobs: %w", err)
	}
	if total == 0 {
		return nil
	}
	if total > len(named) {
		named = append(named, fmt.Sprintf("and %d other objects", total-len(named)))
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "2BP01", Detail: strings.Join(named, "\n"), Routine: DetailByLine,
		Message: fmt.Sprintf("cannot drop schema pgjobs because %d %s made outside pgjobs depend on it", total, map[bool]string{true: "object", false: "objects"}[total == 1])}
}

// dependentsHinted returns err with the hint of a refusal by dependents (2BP01) replaced by what
// the DBA can do before trying again (then): the uninstall and the upgrade are one transaction
// each, so nothing was changed. Any other error is returned as it is.
func dependentsHinted(err error, then string) error {
	pgErr, ok := err.(*pgconn.PgError)
	if !ok || pgErr.Code != "2BP01" {
		return err
	}
	hinted := *pgErr
	hinted.Hint = "Nothing was changed. Drop or change the objects that the detail names (they depend on pgjobs' own), then " + then + "."
	return &hinted
}

// agentSchemaSince is the schema version that added the agent's private schema pgjobs_agent.
const agentSchemaSince = 6

// callSchemasSince is the schema version that added the roles' schemas of call views.
const callSchemasSince = 15

// setAsideSince is the schema version that added pgjobs_gone, where the agent sets the views of
// former calls aside.
const setAsideSince = 18

// apply runs the files of one version.
func apply(ctx context.Context, tx pgx.Tx, v version) error {
	for _, name := range v.files {
		text, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, string(text)); err != nil {
			return fmt.Errorf("apply %s (schema version %d): %w", name, v.number, dependentsHinted(err, "run pgjobs updatesystem again"))
		}
	}
	return nil
}

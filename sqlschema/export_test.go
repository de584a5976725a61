package sqlschema

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// InstallVersion installs the schema as version n of it was, for the upgrade tests.
func InstallVersion(ctx context.Context, db DB, n int) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		vs, err := versions()
		if err != nil {
			return err
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
	})
}

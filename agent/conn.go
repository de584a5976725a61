package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/authwatch"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// connConfig returns the connection settings of the agent's sessions, as user when not "": the
// DSN is read again for that user, so that its own password (PGPASSWORD, ~/.pgpass) is used.
// TCP keepalives let the server end a dead agent's session, and its lock, within seconds.
func (a *dbAgent) connConfig(user string) (*pgx.ConnConfig, error) {
	dsn := a.db.DSN
	if user != "" {
		dsn += " user='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(user) + "'"
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("database %d: %w", a.db.ID, err)
	}
	cfg.RuntimeParams["application_name"] = applicationName(a.db.ID)
	cfg.RuntimeParams["idle_session_timeout"] = "0"
	// A run whose agent died ends within a second instead of running on unowned.
	cfg.RuntimeParams["client_connection_check_interval"] = "1000"
	cfg.RuntimeParams["tcp_keepalives_idle"] = "5"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "1"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	// Calls are validated and written back with this setting; a role's own setting of it (ALTER
	// ROLE ... SET) gives way to what the client asks for at connect.
	cfg.RuntimeParams["standard_conforming_strings"] = "on"
	if user == "" {
		// The agent's own sessions (of a privileged role) resolve names in pg_catalog only: a
		// function or operator a role creates in a schema of the database's search_path (public)
		// is never called instead of a built-in one. Their queries name pgjobs' objects in full.
		cfg.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
		// The agent's own statements never wait long for a lock or run long: a user transaction
		// cannot hold the agent up (what fails is retried, off the firing path).
		cfg.RuntimeParams["lock_timeout"] = strconv.Itoa(int(lockWait.Milliseconds()))
		cfg.RuntimeParams["statement_timeout"] = strconv.Itoa(int(ownStatementTimeout.Milliseconds()))
	}
	cfg.DialFunc = (&net.Dialer{KeepAlive: 5 * time.Second, Timeout: 10 * time.Second}).DialContext
	return cfg, nil
}

// ownStatementTimeout is the statement_timeout of the agent's own sessions.
const ownStatementTimeout = 30 * time.Second

// recordsSessions is the size of the pool of the agent's own sessions for the run history and the
// planning; they are reserved in the server's budget while the agent leads.
const recordsSessions = 2

// recordsPool returns the pool of the agent's own sessions.
func (a *dbAgent) recordsPool() (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		return a.records, nil
	}
	cfg, err := a.connConfig("")
	if err != nil {
		return nil, err
	}
	poolCfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	poolCfg.ConnConfig = cfg
	poolCfg.MaxConns = recordsSessions
	// Its sessions stay open while the agent leads: when the server's connection slots are taken by
	// other clients, the agent still records and plans.
	poolCfg.MaxConnIdleTime, poolCfg.MaxConnLifetime = 24*time.Hour, 24*time.Hour
	pool, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
	if err != nil {
		return nil, fmt.Errorf("database %d: %w", a.db.ID, err)
	}
	unreserve, ok := a.budget.Reserve(recordsSessions)
	if !ok {
		size, fixed := a.budget.Size()
		a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "the session budget of this server (%d) is all taken by the agents' own sessions (%d): runs get one session at a time; raise the sessions setting or max_connections", size, fixed)
	}
	a.records, a.unreserveRecords = pool, unreserve
	return pool, nil
}

// ownerConnConfig returns the connection settings of a session of owner, for its runs.
func (a *dbAgent) ownerConnConfig(owner string) (*pgx.ConnConfig, error) {
	cfg, err := a.connConfig(owner)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = applicationName(a.db.ID) + " job"
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec // the reset between runs deallocates prepared statements
	// The owner may set its own password verifier, and with it the SCRAM iterations the agent
	// computes before the login succeeds or fails: a count over the bound is refused unread.
	authwatch.Watch(&cfg.Config, authwatch.Limits{MaxIterations: a.maxIterations()})
	// A run may LISTEN and notify itself: the notifications reach the session when the run commits,
	// and pgx would keep them until the session closes. Nothing reads them; they are dropped.
	cfg.OnNotification = func(*pgconn.PgConn, *pgconn.Notification) {}
	return cfg, nil
}

// maxIterations returns the most SCRAM iterations computed to log in as an owner, 0 for the default.
func (a *dbAgent) maxIterations() int {
	if a.scramIterations == nil {
		return 0
	}
	return int(a.scramIterations.Load())
}

// openSessionToEnd opens a session authenticated as a job owner to end a backend of its own
// (sessions.Pool.OpenToEnd), with sessions.EndParams: the owner's defaults give way to them.
func (a *dbAgent) openSessionToEnd(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
	cfg, err := a.endConnConfig(owner)
	if err != nil {
		return nil, time.Time{}, err
	}
	// PostgreSQL 17's transaction_timeout, which a role may set for itself too; a server before
	// 17 refuses a session that names it (42704), and is connected to again without it, and not
	// asked again (each refusal is a FATAL line in the server's log).
	if a.noTransactionTimeout.Load() {
		return connectToEnd(ctx, cfg)
	}
	cfg.RuntimeParams["transaction_timeout"] = "0"
	conn, t, err := connectToEnd(ctx, cfg)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42704" {
		a.noTransactionTimeout.Store(true)
		if cfg, err = a.endConnConfig(owner); err != nil { // watched afresh: a connection is one watch
			return nil, time.Time{}, err
		}
		return connectToEnd(ctx, cfg)
	}
	return conn, t, err
}

// endConnConfig returns the connection settings of a session of owner that ends a backend of its
// own.
func (a *dbAgent) endConnConfig(owner string) (*pgx.ConnConfig, error) {
	cfg, err := a.ownerConnConfig(owner)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = applicationName(a.db.ID) + " end"
	for k, v := range sessions.EndParams {
		cfg.RuntimeParams[k] = v
	}
	return cfg, nil
}

// openOwnerSession opens a session authenticated as a job owner, reads its identity and warms its
// run guard.
func (a *dbAgent) openOwnerSession(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
	cfg, err := a.ownerConnConfig(owner)
	if err != nil {
		return nil, time.Time{}, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, time.Time{}, err
	}
	_, start, err := sqlschema.SessionIdentity(ctx, conn)
	if err == nil {
		err = sqlschema.RunGuardWarm(ctx, conn)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, time.Time{}, err
	}
	return conn, start, nil
}

// connectToEnd opens a session that ends a backend, with cfg.
func connectToEnd(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, time.Time, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	return conn, time.Time{}, err
}

// resetPools closes every idle session of the pools; new ones are opened on demand.
func (a *dbAgent) resetPools() {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		a.records.Reset()
	}
	a.owners.Reset()
	a.taskOwners.Reset()
}

func (a *dbAgent) closePools() {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		a.records.Close()
		a.unreserveRecords()
	}
	a.owners.Close()
	a.taskOwners.Close()
}

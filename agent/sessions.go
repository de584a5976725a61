package agent

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// recordsPool returns the pool of the agent's own sessions.
func (a *dbAgent) recordsPool() (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		return a.records, nil
	}
	pool, err := a.newPool("", 8)
	if err != nil {
		return nil, err
	}
	a.records = pool
	return pool, nil
}

// acquire takes a session authenticated as a job owner from its pool.
func (a *dbAgent) acquire(owner string) (*pgxpool.Conn, error) {
	pool, err := a.ownerPool(owner)
	if err != nil {
		return nil, err
	}
	return pool.Acquire(a.runCtx)
}

// ownerPool returns the pool of sessions authenticated as a job owner.
func (a *dbAgent) ownerPool(owner string) (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if pool, ok := a.pools[owner]; ok {
		return pool, nil
	}
	pool, err := a.newPool(owner, a.opt.MaxRuns)
	if err != nil {
		return nil, err
	}
	a.pools[owner] = pool
	return pool, nil
}

func (a *dbAgent) newPool(user string, size int) (*pgxpool.Pool, error) {
	cfg, err := a.connConfig(user)
	if err != nil {
		return nil, err
	}
	poolCfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	poolCfg.ConnConfig = cfg
	poolCfg.MaxConns = int32(size)
	if user != "" {
		poolCfg.ConnConfig.RuntimeParams["application_name"] = applicationName(a.db.ID) + " job"
		// No ping before a run: it would delay the run by a round trip. A dead session fails the
		// run, which records why, and the pool drops it; outages reset the pools anyway.
		poolCfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		// Each session's identity, read once when it opens, names the session of its runs.
		poolCfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			pid, start, err := sqlschema.SessionIdentity(ctx, c)
			if err != nil {
				return err
			}
			a.sessions.Store(uint32(pid), start)
			return sqlschema.RunGuardWarm(ctx, c)
		}
		poolCfg.BeforeClose = func(c *pgx.Conn) { a.sessions.Delete(c.PgConn().PID()) }
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
	if err != nil {
		return nil, fmt.Errorf("database %d: sessions as %s: %w", a.db.ID, cfg.User, err)
	}
	return pool, nil
}

// warm opens, ahead of a fire, the sessions its runs will need: as many per owner as the owner
// has jobs due then (up to MaxRuns), so that no run waits for a connection at its minute.
// Opening a session sends no statement but the one reading its identity.
func (a *dbAgent) warm(jobs []*job) {
	need := map[string]int{}
	for _, j := range jobs {
		if why, _ := refusal(j); why != "" {
			continue // it opens no session
		}
		need[j.owner] = min(need[j.owner]+1, a.opt.MaxRuns)
	}
	for owner, n := range need {
		pool, err := a.ownerPool(owner)
		if err != nil {
			continue // the run reports it
		}
		// Hold all n at once, else the pool hands the same session out again.
		go func() {
			ctx, cancel := context.WithTimeout(a.runCtx, warmLead)
			defer cancel()
			conns := make(chan *pgxpool.Conn, n)
			var opening sync.WaitGroup
			for range n {
				opening.Add(1)
				go func() {
					defer opening.Done()
					if c, err := pool.Acquire(ctx); err == nil {
						conns <- c
					}
				}()
			}
			opening.Wait()
			close(conns)
			for c := range conns {
				c.Release()
			}
		}()
	}
}

// resetPools closes every idle session of the pools; new ones are opened on demand.
func (a *dbAgent) resetPools() {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		a.records.Reset()
	}
	for _, p := range a.pools {
		p.Reset()
	}
}

func (a *dbAgent) closePools() {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		a.records.Close()
	}
	for _, p := range a.pools {
		p.Close()
	}
}

package task

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/authwatch"
)

// remoteConnectTimeout bounds each host's attempt of a remote task whose string sets no
// connect_timeout, and remoteConnectLimit the whole connection, all hosts, whatever the string sets.
const (
	remoteConnectTimeout = 10 * time.Second
	remoteConnectLimit   = 30 * time.Second
)

// remoteTimeoutGrace is how long past twice a remote task's timeout the agent waits for the server
// to end the input (its statement_timeout, which counts each statement of the input on its own)
// before it closes the connection itself.
const remoteTimeoutGrace = 5 * time.Second

// errNoPassword is the refusal of a remote task of a role that is not a superuser whose string
// holds no password.
var errNoPassword = errors.New("a remote task of a role that is not a superuser must give its password in the connection string (password=...): the agent's own credentials are never used for it")

// agentFileKeys are the connection string keys that make the agent read a file of its host, or a
// service of its own: a non-superuser's remote task may not give them.
var agentFileKeys = []string{"service", "servicefile", "passfile", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir", "sslpassword"}

// errPasswordNotAsked refuses a session a remote server opened for a non-superuser's task without
// asking for the password of its string.
var errPasswordNotAsked = errors.New("the remote server let the task in without asking for its password: the agent's own standing there (trust, peer, a certificate) would be used; the task does not run")

// remoteConfig returns the connection settings of a remote task's connection string. A
// non-superuser's task (trusted false) must hold a password, and nothing of the agent's own
// credentials is used for it: its client certificates from the environment are dropped, and the
// connection is refused unless the server asked for that password (so neither trust nor peer
// authentication as the agent's OS user, nor a .pgpass line, lets it in).
//
// What a connection may cost the agent is bounded for every task, the server and the verifier of
// the role there being the task's choice: the SCRAM iterations of a login by maxIterations (0 means
// authwatch.DefaultMaxIterations), the attempts (hosts, their addresses, each again without TLS
// under sslmode=prefer), the SCRAM logins and the bytes before the session is ready by authwatch's
// bounds, and the whole connection by remoteConnectLimit. watched returns the watch of the latest
// attempt.
func remoteConfig(connString string, trusted bool, maxIterations int) (cfg *pgconn.Config, watched func() *authwatch.Reader, err error) {
	keys, err := connKeys(connString)
	if err != nil {
		return nil, nil, fmt.Errorf("the remote connection string: %w", err)
	}
	if !trusted {
		for _, k := range agentFileKeys {
			if _, ok := keys[k]; ok {
				return nil, nil, fmt.Errorf("the remote connection string names %s: a remote task of a role that is not a superuser may not use the agent's files (services, password files, certificates and keys)", k)
			}
		}
	}
	cfg, err = pgconn.ParseConfig(connString)
	if err != nil {
		return nil, nil, fmt.Errorf("the remote connection string: %w", err)
	}
	if _, ok := keys["connect_timeout"]; !ok {
		cfg.ConnectTimeout = remoteConnectTimeout
	}
	if _, ok := keys["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "pgjobs task"
	}
	if attempts := 1 + len(cfg.Fallbacks); attempts > authwatch.MaxAttempts {
		return nil, nil, fmt.Errorf("the remote connection string leads to %d connection attempts (hosts, and each again without TLS under sslmode=prefer), more than %d", attempts, authwatch.MaxAttempts)
	}
	cfg.MaxProtocolMessageBodyLen = sessions.MaxMessage // also for target_session_attrs' query
	watched = authwatch.Watch(cfg, authwatch.RemoteLimits(maxIterations))
	targetAttrs := cfg.ValidateConnect // target_session_attrs, if the string gives them
	cfg.ValidateConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
		c := watched()
		if !trusted && (c == nil || !c.PasswordAsked()) {
			return errPasswordNotAsked
		}
		err := validate(ctx, targetAttrs, pc)
		var notPreferred *pgconn.NotPreferredError
		if c != nil && (err == nil || errors.As(err, &notPreferred)) {
			c.Connected() // pgx may keep a session not preferred, when no other is found
		}
		return err // as it is: pgx tells a NotPreferredError by its type
	}
	if trusted {
		return cfg, watched, nil
	}
	if keys["password"] == "" {
		return nil, nil, errNoPassword
	}
	if keys["user"] == "" {
		return nil, nil, errors.New("a remote task of a role that is not a superuser must name its user in the connection string (user=...): the agent's own user name is not used for it")
	}
	cfg.Password = keys["password"]
	fallbacks := append([]*pgconn.FallbackConfig{{TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	for _, f := range fallbacks { // a certificate could only be the agent's (PGSSLCERT)
		if f.TLSConfig != nil {
			f.TLSConfig.Certificates, f.TLSConfig.GetClientCertificate = nil, nil
		}
	}
	return cfg, watched, nil
}

// validate runs pgx's check of target_session_attrs, if any, on a remote server's session; its
// answer counts within the bound of bytes before the session is connected. A panic of the check
// on an answer it cannot read (no row) is its error.
func validate(ctx context.Context, targetAttrs pgconn.ValidateConnectFunc, pc *pgconn.PgConn) (err error) {
	if targetAttrs == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the remote server's answer to the check of target_session_attrs cannot be read: %v", p)
		}
	}()
	return targetAttrs(ctx, pc)
}

// connKeys returns the keys and values a libpq connection string gives itself, in either form
// (key=value pairs, or a postgres:// URI), so that what the environment adds is told apart.
func connKeys(s string) (map[string]string, error) {
	keys := map[string]string{}
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		u, err := url.Parse(s)
		var ue *url.Error
		if errors.As(err, &ue) { // its text quotes the URI, password and all: not logged
			return nil, fmt.Errorf("the URI does not parse: %w", ue.Err)
		} else if err != nil {
			return nil, err
		}
		if u.User != nil {
			keys["user"] = u.User.Username()
			if p, ok := u.User.Password(); ok {
				keys["password"] = p
			}
		}
		for k, v := range u.Query() {
			keys[k] = v[len(v)-1]
		}
		return keys, nil
	}
	for i := 0; ; {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return keys, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, fmt.Errorf("%q has no = at position %d", s, i+1)
		}
		key := strings.TrimSpace(s[i : i+eq])
		i += eq + 1
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("an unterminated quoted value of %s", key)
			}
			i++
		} else {
			for ; i < len(s) && !isSpace(s[i]); i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
			}
		}
		keys[key] = v.String()
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// remoteHooks tell the task service what a remote task's connection did.
type remoteHooks struct {
	logins  func(n int)      // the SCRAM logins the connection computed, once it is made or has failed
	started func(pid uint32) // the remote backend's pid, once connected
}

// runRemote runs a remote task's input on a connection of its own, opened with its string, and
// closes it after.
func runRemote(ctx context.Context, connString string, trusted bool, maxIterations int, timeout time.Duration, input string, out *Output, hooks remoteHooks) Result {
	cfg, watched, err := remoteConfig(connString, trusted, maxIterations)
	if err != nil {
		text := AgentErrorText(err.Error(), input)
		return Result{Error: &text, SQLState: "42501"} // the same string fails the same way again
	}
	connectCtx, cancel := context.WithTimeout(ctx, remoteConnectLimit)
	conn, err := pgconn.ConnectConfig(connectCtx, cfg)
	cancel()
	logins := 0
	if c := watched(); c != nil {
		logins = c.Logins()
	}
	hooks.logins(logins)
	if err != nil {
		code := "08001"
		switch {
		case errors.Is(err, errPasswordNotAsked):
			code = "42501"
		case authwatch.Refused(err):
			code = authwatch.SQLState(err)
		}
		text := AgentErrorText(fmt.Sprintf("could not connect to the remote server: %v", err), input)
		return Result{Error: &text, SQLState: code}
	}
	defer conn.Conn().Close() // last: pgx's close after a broken read would wait 15 s for the server
	defer conn.Close(context.Background())
	hooks.started(conn.PID())
	ms := timeout.Milliseconds()
	if timeout > 0 && ms == 0 {
		ms = 1
	}
	// The server's statement_timeout ends the input; the server being the task's choice, the agent
	// closes the connection itself some time after it.
	var expired atomic.Bool
	limit := 2*timeout + remoteTimeoutGrace
	if timeout > 0 {
		closer := time.AfterFunc(limit, func() {
			expired.Store(true)
			conn.Conn().Close()
		})
		defer closer.Stop()
	}
	r := execute(ctx, conn, fmt.Sprintf("SET statement_timeout = %d", ms), input, "", func() {}, out) // another server: no proof
	if expired.Load() && r.Broken {
		text := AgentErrorText(fmt.Sprintf("the remote server did not end the task within %s (twice its timeout of %s, and %s): the agent closed the connection", limit, timeout, remoteTimeoutGrace), input)
		r.Error, r.SQLState = &text, "57014"
	}
	return r
}

// maxIterations returns the most SCRAM iterations the agent computes to log in to a remote server.
func (s *Service) maxIterations() int {
	if s.cfg.MaxIterations == nil {
		return 0
	}
	return s.cfg.MaxIterations()
}

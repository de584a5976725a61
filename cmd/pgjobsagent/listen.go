package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/metrics"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/urfave/cli/v2"
)

// SuggestedListen is the address the README and the default configuration suggest for --listen.
const SuggestedListen = "127.0.0.1:9187"

// listenFlags are the options of the HTTP endpoint: metrics, health and readiness.
func listenFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "listen", Usage: "serve /metrics (Prometheus), /healthz and /readyz on `ADDR`, such as " + SuggestedListen + " (default: off); an address other than loopback needs --listen-token or --listen-insecure"},
		&cli.StringFlag{Name: "listen-token", Usage: "require \"Authorization: Bearer TOKEN\" on /metrics and /readyz, TOKEN being the first line of `FILE` (mode 600: other users may neither read nor write it); /healthz stays open"},
		&cli.BoolFlag{Name: "listen-insecure", Usage: "allow --listen on an address other than loopback without a token: anyone who reaches it reads the metrics"},
		&cli.IntFlag{Name: "metrics-jobs", Value: 100, Usage: "how many jobs of each database get a job_name label of their own in the metrics, the first seen first; the runs of the others count as job_name=\"" + metrics.OtherJobs + "\" (also the bound of the task groups' labels)"},
	}
}

// listener is the HTTP endpoint of the agent.
type listener struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// startListener serves the endpoints on --listen, if set, for the master's databases; nil when off.
// It refuses an address other than loopback without a token or --listen-insecure.
func startListener(c *cli.Context, m *metrics.Agent, master *agent.Master) (*listener, error) {
	addr := c.String("listen")
	if addr == "" {
		if c.IsSet("listen-token") || c.Bool("listen-insecure") {
			return nil, usageError{errors.New("--listen-token and --listen-insecure need --listen ADDR")}
		}
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--listen %q: %v (give HOST:PORT, such as %s)", addr, err, SuggestedListen)}
	}
	if c.IsSet("listen-token") && c.Bool("listen-insecure") {
		return nil, usageError{errors.New("--listen-token and --listen-insecure exclude each other: a token is the secure choice")}
	}
	var token []byte
	if name := c.String("listen-token"); name != "" {
		if token, err = readToken(name); err != nil {
			return nil, err
		}
	} else if !loopback(host) && !c.Bool("listen-insecure") {
		return nil, usageError{fmt.Errorf("--listen %q is not a loopback address: anyone who reaches it would read the metrics and the databases' state; give --listen-token FILE (recommended) or --listen-insecure", addr)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", requireToken(token, readyHandler(master)))
	mux.Handle("GET /metrics", requireToken(token, m.Handler()))
	l := &listener{ln: ln, done: make(chan error, 1), srv: &http.Server{
		Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
	}}
	go func() { l.done <- l.srv.Serve(ln) }()
	return l, nil
}

// Addr returns the address the endpoint listens on.
func (l *listener) Addr() string { return l.ln.Addr().String() }

// close stops serving, letting requests in flight end within a few seconds.
func (l *listener) close() error {
	if l == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if serveErr := <-l.done; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	if err != nil {
		return fmt.Errorf("stop serving %s: %w", l.Addr(), err)
	}
	return nil
}

// loopback reports whether host names only the machine itself: localhost or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readToken reads the token of --listen-token: the file's first line, which must not be empty, in a
// file that other users may neither read nor write.
func readToken(name string) ([]byte, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("--listen-token: %w", err)
	}
	if info.Mode().Perm()&0o066 != 0 {
		return nil, fmt.Errorf("--listen-token %s: other users may read or write it (mode %04o): chmod 600 %s", name, info.Mode().Perm(), name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--listen-token: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, fmt.Errorf("--listen-token %s: the first line is empty: write the token there", name)
	}
	return []byte(line), nil
}

// requireToken lets a request through to next only with "Authorization: Bearer <token>"; every
// request when token is nil.
func requireToken(token []byte, next http.Handler) http.Handler {
	if token == nil {
		return next
	}
	want := sha256.Sum256(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, given, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer") // the scheme is case-insensitive (RFC 7235)
		got := sha256.Sum256([]byte(strings.TrimSpace(given)))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pgjobsagent"`)
			http.Error(w, "401 unauthorized: this endpoint needs the header Authorization: Bearer <the token of --listen-token>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readiness is the answer of /readyz.
type readiness struct {
	Ready     bool            `json:"ready"`
	Serving   bool            `json:"serving"` // false while the agent starts or stops: no database is ready
	Databases []databaseReady `json:"databases"`
}

type databaseReady struct {
	ID       int       `json:"id"`
	Database string    `json:"database"`
	Ready    bool      `json:"ready"`
	State    string    `json:"state"`
	Since    time.Time `json:"since"`
	Reason   string    `json:"reason,omitempty"`
}

// readyHandler answers 200 when every configured database is served (its agent active, or
// standing by behind a live leader), else 503, and 503 while the agent starts or stops; both with JSON naming
// each database, its state and why it is not ready.
func readyHandler(master *agent.Master) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		statuses, serving := master.Status()
		answer := readiness{Ready: serving, Serving: serving, Databases: []databaseReady{}}
		for _, s := range statuses {
			d := databaseReady{ID: s.ID, Database: s.Database, Ready: s.Ready(), State: string(s.State), Since: s.Since.UTC(), Reason: s.Reason}
			if !d.Ready && d.Reason == "" {
				d.Reason = "neither active nor standing by behind a live active agent yet"
			}
			answer.Ready = answer.Ready && d.Ready
			answer.Databases = append(answer.Databases, d)
		}
		body, err := json.MarshalIndent(answer, "", "  ")
		if err != nil {
			http.Error(w, "readyz: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !answer.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		// the reasons quote the server's errors, which may hold roles' names: printable, as pgjobs prints
		w.Write(append(printable.JSON(body), '\n')) //nolint:errcheck // the client went away
	})
}

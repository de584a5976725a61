package task

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/internal/authwatch"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// fakeServer listens on 127.0.0.1 and serves each connection with serve once it read its startup
// message; it drops the cancel requests pgx sends after a failed attempt. It returns the port.
func fakeServer(t *testing.T, serve func(c net.Conn)) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			go func() {
				defer c.Close()
				first, err := readMessage(c, startup)
				if err != nil || len(first) >= 4 && binary.BigEndian.Uint32(first) == cancelRequestCode {
					return
				}
				serve(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// cancelRequestCode opens a CancelRequest, in place of a startup message's protocol version.
const cancelRequestCode = 80877102

// ignoreHooks are the hooks of a remote task whose logins and start are not looked at.
func ignoreHooks() remoteHooks { return remoteHooks{logins: func(int) {}, started: func(uint32) {}} }

// runFakeString runs a remote task with the connection string conn.
func runFakeString(conn string) Result {
	return runRemote(context.Background(), conn, false, 0, 0, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}), ignoreHooks())
}

// runFakeBounded runs a remote task on the fake server at port, with a bound of SCRAM iterations.
func runFakeBounded(port, maxIterations int) Result {
	conn := fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable", port)
	return runRemote(context.Background(), conn, false, maxIterations, 0, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}), ignoreHooks())
}

// TestRemoteShortLength: a remote server named by a non-superuser's task answers the startup
// with a message whose length is below 4; the watch of its messages took it and panicked, ending
// the whole agent (found by the code review of the task service).
func TestRemoteShortLength(t *testing.T) {
	t.Parallel()
	port := fakeServer(t, func(c net.Conn) {
		_, _ = c.Write([]byte{'R', 0, 0, 0, 0, 0, 0, 0, 3})
		_, _ = c.Read(make([]byte, 1024))
	})
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("runRemote panicked: %v", p)
		}
	}()
	t.Logf("%+v", runFakeBounded(port, 0))
}

// TestRemoteScramIterations: the server a role's remote task names asks for 10,000,000 SCRAM
// iterations (its own verifier there, or a server of the role's own), seconds of the agent's CPU
// per attempt, also after it accepted the session (which pgx would answer: the code review); the
// agent refuses the challenge before computing it, and says why. A count within the bound given is
// answered.
func TestRemoteScramIterations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		afterOK    bool
		iterations string
		bound      int
		refused    bool
	}{
		{"over the default bound", false, "10000000", 0, true},
		{"after AuthenticationOk", true, "10000000", 0, true},
		{"within a bound given", false, "20000", 30000, false},
		{"over a bound given", false, "20000", 10000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			answered := make(chan string, 1)
			port := fakeServer(t, func(conn net.Conn) {
				answered <- scramChallenge(conn, c.afterOK, c.iterations)
			})
			r := runFakeBounded(port, c.bound)
			refusal := r.Error != nil && strings.Contains(*r.Error, "asks for "+c.iterations+" SCRAM iterations") && r.SQLState == "28000"
			got := <-answered
			switch {
			case c.refused && (!refusal || got != "no answer"):
				t.Fatalf("error %v, SQLSTATE %s, the server: %s; want the refusal of %s iterations, 28000, no answer", deref(r.Error), r.SQLState, got, c.iterations)
			case !c.refused && (refusal || got != "answered"):
				t.Fatalf("error %v, the server: %s; want the challenge answered", deref(r.Error), got)
			}
		})
	}
}

// scramChallenge answers a client's startup with a SCRAM challenge of iterations, after an
// AuthenticationOk when afterOK, and says whether the client answered it.
func scramChallenge(c net.Conn, afterOK bool, iterations string) string {
	if afterOK {
		_, _ = c.Write(authRequest(0, ""))
	}
	_, _ = c.Write(authRequest(10, "SCRAM-SHA-256\x00\x00"))
	first, err := readMessage(c, 'p') // SASLInitialResponse: mechanism, length, n,,n=,r=NONCE
	_, nonce, found := bytes.Cut(first, []byte(",r="))
	if err != nil || !found {
		return fmt.Sprintf("no client-first-message: %q, %v", first, err)
	}
	_, _ = c.Write(authRequest(11, "r="+string(nonce)+"server,s=c2FsdHNhbHQ=,i="+iterations))
	if _, err := readMessage(c, 'p'); err != nil { // SASLResponse
		return "no answer"
	}
	return "answered"
}

// authRequest returns an AuthenticationRequest message of code with data.
func authRequest(code uint32, data string) []byte {
	body := append(binary.BigEndian.AppendUint32(nil, code), data...)
	return append(binary.BigEndian.AppendUint32([]byte{'R'}, uint32(len(body)+4)), body...)
}

// readMessage reads the startup message of the client, or another of type typ (an error if of
// another type, such as the Terminate pgx may send as it closes).
func readMessage(c net.Conn, typ byte) ([]byte, error) {
	head := make([]byte, 4)
	if typ != startup {
		head = make([]byte, 5)
	}
	if _, err := io.ReadFull(c, head); err != nil {
		return nil, err
	}
	if typ != startup && head[0] != typ {
		return nil, fmt.Errorf("a message of type %q, want %q", head[0], typ)
	}
	body := make([]byte, binary.BigEndian.Uint32(head[len(head)-4:])-4)
	_, err := io.ReadFull(c, body)
	return body, err
}

// startup stands for the type of the startup message, which has none.
const startup = 0

// TestRemoteConnectionBounds: a server of the task's choosing, or a string's host list, cannot make
// one connection cost the agent more than authwatch's bounds (the README-only attack on the SCRAM
// bound: 2,000 hosts cost 7.8 s of CPU, a flood of notices before the login 35 s in 30 s, a
// challenge declared of 1 GB a gigabyte of memory).
func TestRemoteConnectionBounds(t *testing.T) {
	t.Parallel()
	body := []byte("SNOTICE\x00M" + strings.Repeat("x", 100) + "\x00\x00")
	notice := append(binary.BigEndian.AppendUint32([]byte{'N'}, uint32(4+len(body))), body...)
	notices := bytes.Repeat(notice, 1000)
	var answered atomic.Int32 // by the servers of "a login on every host"
	for _, c := range []struct {
		name   string
		hosts  int
		serve  func(net.Conn)
		want   string // in the task's error
		logins int    // challenges the agent answered, -1 when not counted
	}{
		{"a flood of notices", 1, func(conn net.Conn) {
			for i := 0; i < 20; i++ { // 2 MB
				if _, err := conn.Write(notices); err != nil {
					return
				}
			}
		}, "more than 65536 bytes before the session was ready", -1},
		{"a challenge declared of 1 GB", 1, func(conn net.Conn) {
			_, _ = conn.Write([]byte{'R', 0x40, 0, 0, 0, 0, 0, 0, 11})
			_, _ = conn.Write(make([]byte, 1<<20))
		}, "more than 65536 bytes before the session was ready", -1},
		{"a host list past the attempts", authwatch.MaxAttempts + 1, nil, "17 connection attempts", -1},
		{"a login on every host", 6, func(conn net.Conn) {
			if scramChallenge(conn, false, "4096") == "answered" {
				answered.Add(1)
			}
		}, "more than 4 SCRAM logins", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			serve := c.serve
			if serve == nil {
				serve = func(net.Conn) {}
			}
			var hosts, ports []string // a server each: the agent does not try one again after it broke off
			for range c.hosts {
				hosts, ports = append(hosts, "127.0.0.1"), append(ports, strconv.Itoa(fakeServer(t, serve)))
			}
			conn := fmt.Sprintf("host=%s port=%s user=x password=y sslmode=disable", strings.Join(hosts, ","), strings.Join(ports, ","))
			counted := -1
			r := runRemote(context.Background(), conn, false, 0, 0, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}),
				remoteHooks{logins: func(n int) { counted = n }, started: func(uint32) { t.Error("started on a server that refused") }})
			if r.Error == nil || !strings.Contains(*r.Error, c.want) {
				t.Fatalf("error %v, want one with %q", deref(r.Error), c.want)
			}
			// A server closes its connection once it read the answer, and only then does the agent
			// try the next host: every answer is counted by now.
			if c.logins >= 0 && (answered.Load() != int32(c.logins) || counted != c.logins) {
				t.Fatalf("the agent answered %d challenges and counted %d logins, want %d; error %v", answered.Load(), counted, c.logins, deref(r.Error))
			}
		})
	}
}

// login lets the client in with its password.
func login(conn net.Conn) error {
	_, _ = conn.Write(authRequest(3, "")) // cleartext: the password asked
	if _, err := readMessage(conn, 'p'); err != nil {
		return err
	}
	_, err := conn.Write(cat(authRequest(0, ""), message('K', make([]byte, 8)), message('Z', []byte("I"))))
	return err
}

// acceptLogin lets the client in with its password, answers its SET and reads its input's query.
func acceptLogin(conn net.Conn) error {
	if err := login(conn); err != nil {
		return err
	}
	if _, err := readMessage(conn, 'Q'); err != nil { // SET statement_timeout
		return err
	}
	_, _ = conn.Write(cat(message('C', []byte("SET\x00")), message('Z', []byte("I"))))
	_, err := readMessage(conn, 'Q')
	return err
}

// message returns a server message of type typ with body.
func message(typ byte, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{typ}, uint32(len(body)+4)), body...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestRemoteSessionBounds: after the login, a server of the task's choosing cannot make the agent
// keep without end what it reports, nor keep the task past its timeout (the second README-only
// attack: endless new parameters took the agent to 8.7 GB, endless notices held a task with a
// timeout of 5 s for 75 s at 1.3 cores).
func TestRemoteSessionBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, flood string
		timeout     time.Duration
		want        string
	}{
		{"new parameters", "S", 0, "more than 256 parameters"},
		{"notices past the timeout", "N", 200 * time.Millisecond, "did not end the task within 5.4s (twice its timeout of 200ms, and 5s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			port := fakeServer(t, func(conn net.Conn) {
				if acceptLogin(conn) != nil {
					return
				}
				for i := 0; ; i++ {
					m := message('N', []byte("SNOTICE\x00Mflood\x00\x00"))
					if c.flood == "S" {
						m = message('S', []byte(fmt.Sprintf("p%d\x00v\x00", i)))
					}
					if _, err := conn.Write(m); err != nil {
						return
					}
				}
			})
			conn := fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable", port)
			done := make(chan Result, 1)
			go func() {
				done <- runRemote(context.Background(), conn, false, 0, c.timeout, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}), ignoreHooks())
			}()
			var r Result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the task still runs after 20 s")
			}
			if r.Error == nil || !strings.Contains(*r.Error, c.want) {
				t.Fatalf("error %v, want one with %q", deref(r.Error), c.want)
			}
		})
	}
}

// TestRemoteSessionAttrsCheck: the answer to pgx's check of target_session_attrs, which pgx keeps
// whole, counts within the bound of bytes before the session is connected, and an answer the check
// cannot read is its error, not a panic (the third README-only attack: endless rows took the agent
// to 3.8 GB in 10 s; an answer without a row panicked and leaked the connection).
func TestRemoteSessionAttrsCheck(t *testing.T) {
	t.Parallel()
	row := message('D', append([]byte{0, 1, 0, 0, 0x40, 0}, make([]byte, 0x4000)...)) // one column of 16 KiB
	for _, c := range []struct {
		name, want string
		answer     func(net.Conn)
	}{
		{"endless rows", "more than 65536 bytes before the session was ready and checked", func(conn net.Conn) {
			_, _ = conn.Write(message('T', append([]byte{0, 1}, append([]byte("transaction_read_only\x00"), make([]byte, 18)...)...)))
			for {
				if _, err := conn.Write(row); err != nil {
					return
				}
			}
		}},
		{"no row", "answer to the check of target_session_attrs cannot be read", func(conn net.Conn) {
			_, _ = conn.Write(cat(message('C', []byte("SHOW\x00")), message('Z', []byte("I"))))
			_, _ = readMessage(conn, 'Q')
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			port := fakeServer(t, func(conn net.Conn) {
				if login(conn) != nil {
					return
				}
				if _, err := readMessage(conn, 'Q'); err == nil { // show transaction_read_only
					c.answer(conn)
				}
			})
			conn := fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable target_session_attrs=read-write", port)
			r := runFakeString(conn)
			if r.Error == nil || !strings.Contains(*r.Error, c.want) {
				t.Fatalf("error %v, want one with %q", deref(r.Error), c.want)
			}
		})
	}
}

// TestRemoteConfigErrorsHideThePassword: a remote connection string that does not parse is
// refused with an error that is logged and written to the task row: it never holds the password
// (the second attacker helper's N11: a URI with a bad escape was quoted whole).
func TestRemoteConfigErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"postgresql://app:S3cretPW3@db.ex%ZZample/app",
		"postgres://app:S3cretPW3@db.example:99999/app",
		"host=db.example port=abc user=app password=S3cretPW3",
		"host=db.example sslmode=bogus password=S3cretPW3",
	} {
		_, _, err := remoteConfig(s, false, 0)
		if err == nil || strings.Contains(err.Error(), "S3cretPW3") {
			t.Errorf("remoteConfig(%q): %v, want an error without the password", s, err)
		}
	}
}

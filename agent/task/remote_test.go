package task

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// fakeServer listens on 127.0.0.1 and serves one connection with serve; it returns the port.
func fakeServer(t *testing.T, serve func(c net.Conn)) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// runFakeBounded runs a remote task on the fake server at port, with a bound of SCRAM iterations.
func runFakeBounded(port, maxIterations int) Result {
	conn := fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable", port)
	return runRemote(context.Background(), conn, false, maxIterations, 0, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}), func(uint32) {})
}

// TestRemoteShortLength: a remote server named by a non-superuser's task answers the startup
// with a message whose length is below 4; the watch of its messages took it and panicked, ending
// the whole agent (found by the code review of the task service).
func TestRemoteShortLength(t *testing.T) {
	t.Parallel()
	port := fakeServer(t, func(c net.Conn) {
		buf := make([]byte, 1024)
		_, _ = c.Read(buf) // the startup message
		_, _ = c.Write([]byte{'R', 0, 0, 0, 0, 0, 0, 0, 3})
		_, _ = c.Read(buf)
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

// scramChallenge serves a client's startup with a SCRAM challenge of iterations, after an
// AuthenticationOk when afterOK, and says whether the client answered it.
func scramChallenge(c net.Conn, afterOK bool, iterations string) string {
	if _, err := readMessage(c, false); err != nil { // the startup message
		return err.Error()
	}
	if afterOK {
		_, _ = c.Write(authRequest(0, ""))
	}
	_, _ = c.Write(authRequest(10, "SCRAM-SHA-256\x00\x00"))
	first, err := readMessage(c, true) // SASLInitialResponse: mechanism, length, n,,n=,r=NONCE
	_, nonce, found := bytes.Cut(first, []byte(",r="))
	if err != nil || !found {
		return fmt.Sprintf("no client-first-message: %q, %v", first, err)
	}
	_, _ = c.Write(authRequest(11, "r="+string(nonce)+"server,s=c2FsdHNhbHQ=,i="+iterations))
	if _, err := readMessage(c, true); err != nil {
		return "no answer"
	}
	return "answered"
}

// authRequest returns an AuthenticationRequest message of code with data.
func authRequest(code uint32, data string) []byte {
	body := append(binary.BigEndian.AppendUint32(nil, code), data...)
	return append(binary.BigEndian.AppendUint32([]byte{'R'}, uint32(len(body)+4)), body...)
}

// readMessage reads a message of the client: with its type byte when typed (all but the startup).
func readMessage(c net.Conn, typed bool) ([]byte, error) {
	head := make([]byte, 4)
	if typed {
		head = make([]byte, 5)
	}
	if _, err := io.ReadFull(c, head); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(head[len(head)-4:])-4)
	_, err := io.ReadFull(c, body)
	return body, err
}

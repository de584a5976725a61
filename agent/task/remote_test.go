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

func runFake(port int) Result {
	conn := fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable", port)
	return runRemote(context.Background(), conn, false, 0, 0, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}), func(uint32) {})
}

// TestSnifferShortLength: a remote server named by a non-superuser's task answers the startup
// with a message whose length is below 4; the sniffer took it and panicked, ending the whole agent
// (found by the code review of the task service).
func TestSnifferShortLength(t *testing.T) {
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
	t.Logf("%+v", runFake(port))
}

// TestRemoteScramIterations: the server a role's remote task names asks for 10,000,000 SCRAM
// iterations (its own verifier there, or a server of the role's own), seconds of the agent's CPU
// per attempt; the agent refuses the challenge before computing it, and says why.
func TestRemoteScramIterations(t *testing.T) {
	answered := make(chan string, 1)
	port := fakeServer(t, func(c net.Conn) {
		if _, err := readMessage(c, false); err != nil { // the startup message
			answered <- err.Error()
			return
		}
		_, _ = c.Write(authRequest(10, "SCRAM-SHA-256\x00\x00"))
		first, err := readMessage(c, true) // SASLInitialResponse: mechanism, length, n,,n=,r=NONCE
		_, nonce, found := bytes.Cut(first, []byte(",r="))
		if err != nil || !found {
			answered <- fmt.Sprintf("no client-first-message: %q, %v", first, err)
			return
		}
		_, _ = c.Write(authRequest(11, "r="+string(nonce)+"server,s=c2FsdHNhbHQ=,i=10000000"))
		if final, err := readMessage(c, true); err == nil {
			answered <- fmt.Sprintf("the client answered the challenge: %q", final)
			return
		}
		answered <- ""
	})
	r := runFake(port)
	if r.Error == nil || !strings.Contains(*r.Error, "asks for 10000000 SCRAM iterations") || r.SQLState != "28000" {
		t.Fatalf("error %v, SQLSTATE %s; want the refusal of 10000000 iterations, 28000", deref(r.Error), r.SQLState)
	}
	if got := <-answered; got != "" {
		t.Fatal(got)
	}
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

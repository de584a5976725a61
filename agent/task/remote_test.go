package task

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestSnifferShortLength: a remote server named by a non-superuser's task answers the startup
// with a message whose length is below 4; the sniffer took it and panicked, ending the whole agent
// (found by the code review of the task service).
func TestSnifferShortLength(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1024)
		_, _ = c.Read(buf) // the startup message
		_, _ = c.Write([]byte{'R', 0, 0, 0, 0, 0, 0, 0, 3})
		_, _ = c.Read(buf)
	}()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("runRemote panicked: %v", p)
		}
	}()
	conn := fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable", ln.Addr().(*net.TCPAddr).Port)
	r := runRemote(context.Background(), conn, false, 0, "SELECT 1", NewOutput(sqlschema.TaskFormat{Delimiter: "\t", Null: `\N`}), func(uint32) {})
	t.Logf("%+v", r)
}

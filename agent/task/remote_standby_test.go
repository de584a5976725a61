package task

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// preferStandbyServer serves sessions that answer the check of target_session_attrs as a primary,
// and each other query with result; slow delays the login of the nth connection served (from 1).
func preferStandbyServer(t *testing.T, result []byte, slow func(n int32) time.Duration) int {
	column := append([]byte("c\x00"), make([]byte, 18)...)
	answer := func(value []byte) []byte {
		row := append(binary.BigEndian.AppendUint32([]byte{0, 1}, uint32(len(value))), value...)
		return cat(message('T', append([]byte{0, 1}, column...)), message('D', row), message('C', []byte("SELECT 1\x00")), message('Z', []byte("I")))
	}
	var served atomic.Int32
	return fakeServer(t, func(conn net.Conn) {
		time.Sleep(slow(served.Add(1)))
		if login(conn) != nil {
			return
		}
		for {
			q, err := readMessage(conn, 'Q')
			if err != nil {
				return
			}
			switch {
			case bytes.Contains(q, []byte("pg_is_in_recovery")):
				_, err = conn.Write(answer([]byte("f")))
			case bytes.HasPrefix(q, []byte("SET")):
				_, err = conn.Write(cat(message('C', []byte("SET\x00")), message('Z', []byte("I"))))
			default:
				_, err = conn.Write(answer(result))
			}
			if err != nil {
				return
			}
		}
	})
}

// preferStandby returns the connection string of a task on the fake server at port.
func preferStandby(port int) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=x password=y sslmode=disable target_session_attrs=prefer-standby", port)
}

// TestRemotePreferStandbyKeepsItsSession: with target_session_attrs=prefer-standby and no standby,
// pgx connects again to the server it found not preferred and keeps that session; it is connected
// all the same, and its answers no longer count within the startup's 64 KiB (the fourth code
// review: a result of 100 KiB failed).
func TestRemotePreferStandbyKeepsItsSession(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 100<<10)
	port := preferStandbyServer(t, big, func(int32) time.Duration { return 0 })
	r := runFakeString(preferStandby(port))
	if r.Error != nil || r.Output == nil || len(*r.Output) < len(big) {
		t.Fatalf("error %v, output %v; want the result of %d bytes", deref(r.Error), r.Output != nil, len(big))
	}
}

// TestRemotePreferStandbySlowAgain: prefer-standby's second connection to the server it found not
// preferred is an attempt, not a cancel request, so the cancel's limit of 1 s does not cut it
// short (the fifth code review: the limit of a redial to a server whose session was ready).
func TestRemotePreferStandbySlowAgain(t *testing.T) {
	t.Parallel()
	port := preferStandbyServer(t, []byte("done"), func(n int32) time.Duration {
		if n == 2 {
			return 1500 * time.Millisecond
		}
		return 0
	})
	r := runFakeString(preferStandby(port))
	if r.Error != nil || r.Output == nil || !bytes.Contains([]byte(*r.Output), []byte("done")) {
		t.Fatalf("error %v, output %v; want the result of the second session", deref(r.Error), deref(r.Output))
	}
}

package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent/sessions"
)

// TestOwnerLoginsArePaced: an owner whose runs close their sessions (tasks of count=1) opens
// LoginBurst sessions at once and then waits in line for its next login, while another owner's
// run gets its session at once; the waiting run is served when the login is due (the README-only
// attack of 2026-11-27: 40 logins a second of alice made bob's tasks up to 228 ms late).
func TestOwnerLoginsArePaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	b := sessions.NewBudget(8)
	b.LoginBurst, b.LoginRate = 2, 1 // a login a second after the first two
	p := b.NewPool(ctx, 8, opener(cluster, db))
	defer p.Close()
	acquire := func(owner string) (s *sessions.Session, waited bool) {
		t.Helper()
		s, err := p.Acquire(ctx, owner, sessions.Hooks{Waiting: func(int) { waited = true }})
		if err != nil {
			t.Fatalf("acquire as %s: %v", owner, err)
		}
		return s, waited
	}
	for i := range 2 {
		s, waited := acquire(alice)
		if waited {
			t.Fatalf("alice's run %d of the burst waited", i+1)
		}
		s.Close() // count=1: the session takes no further task
	}
	waiting := make(chan bool, 1)
	go func() {
		s, waited := acquire(alice)
		s.Close()
		waiting <- waited
	}()
	s, waited := acquire(bob)
	if waited {
		t.Error("bob's run waited for alice's logins")
	}
	s.Release()
	if !<-waiting {
		t.Error("alice's third login in a row did not wait for its turn")
	}
	s, waited = acquire(bob) // his idle session: no login
	if waited || s.Runs != 2 {
		t.Errorf("bob's second run waited (%v), or did not reuse his session (%d runs)", waited, s.Runs)
	}
	s.Release()
}

// TestRemoteLoginsArePaced: the connections the agent opens as an owner outside the pools (remote
// tasks), and each of their SCRAM logins, count within the same logins: once its burst is spent
// the owner waits, until its context ends; another owner does not wait.
func TestRemoteLoginsArePaced(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(8)
	b.LoginBurst, b.LoginRate = 3, 0.5 // then a login every 2 s
	p := b.NewPool(context.Background(), 8, opener(cluster, cluster.NewDatabase(t)))
	defer p.Close()
	if err := p.AwaitLogin(context.Background(), "alice"); err != nil {
		t.Fatalf("alice's first login: %v", err)
	}
	p.ChargeLogins("alice", 2) // her connection's two further SCRAM logins
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.AwaitLogin(short, "alice"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("alice's fourth login at once: %v; want it to wait past its context", err)
	}
	if err := p.AwaitLogin(short, "bob"); err != nil { // not a wait: its context's end does not count
		t.Fatalf("bob's login, alice's spent: %v", err)
	}
}

package sessions_test

import (
	"context"
	"errors"
	"fmt"
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
	b.LoginBurst, b.LoginRate = 2, 0.5 // a login every 2 s after the first two
	p := b.NewPool(ctx, 8, opener(cluster, db))
	defer p.Close()
	acquire := func(owner string) (s *sessions.Session, waited bool) {
		s, err := p.Acquire(ctx, owner, sessions.Hooks{Waiting: func(int) { waited = true }})
		if err != nil {
			panic(fmt.Sprintf("acquire as %s: %v", owner, err)) // also from the goroutine below
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

// TestPacedLineIsServedWhenItsLoginIsDue: a run of alice's waits in one database for a session
// (its pool is full) until her run in another database took her last login; then her session in
// the first closes (count=1). Her waiting run is served once her next login is due, not at the
// next unrelated event (the code review of the pace: it waited for the idle timer).
func TestPacedLineIsServedWhenItsLoginIsDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db1, db2 := cluster.NewDatabase(t), cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db1)
	b := sessions.NewBudget(8)
	b.LoginBurst, b.LoginRate, b.OldestAfter = 2, 2, 20*time.Millisecond
	p1 := b.NewPool(ctx, 1, opener(cluster, db1))
	p2 := b.NewPool(ctx, 8, opener(cluster, db2))
	defer p1.Close()
	defer p2.Close()
	first, err := p1.Acquire(ctx, alice, sessions.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		s, err := p1.Acquire(ctx, alice, sessions.Hooks{Waiting: func(int) { close(waiting) }})
		if err == nil {
			s.Release()
		}
		served <- err
	}()
	<-waiting
	time.Sleep(100 * time.Millisecond)                     // past OldestAfter: no timer of the line is left
	other, err := p2.Acquire(ctx, alice, sessions.Hooks{}) // her last login
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	other.Release()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second): // her login is due within 0.5 s
		t.Fatal("alice's waiting run was not served within 5 s of her next login being due")
	}
}

// TestPacedLineHoldsUpNoWarming: a run waiting only for its owner's next login keeps neither
// another owner's sessions from being warmed ahead of a fire nor the bookkeeping waiting for
// Quiet (the code review of the pace).
func TestPacedLineHoldsUpNoWarming(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db1, db2 := cluster.NewDatabase(t), cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db1), cluster.NewRole(t, "bob", db2)
	b := sessions.NewBudget(8)
	b.LoginBurst, b.LoginRate = 1, 0.1 // her next login in 10 s
	p1 := b.NewPool(ctx, 8, opener(cluster, db1))
	p2 := b.NewPool(ctx, 8, opener(cluster, db2))
	defer p1.Close()
	defer p2.Close()
	s, err := p1.Acquire(ctx, alice, sessions.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	paced, cancel := context.WithCancel(ctx)
	defer cancel()
	waiting := make(chan struct{})
	go p1.Acquire(paced, alice, sessions.Hooks{Waiting: func(int) { close(waiting) }})
	<-waiting
	select {
	case <-b.Quiet():
	default:
		t.Error("Quiet waits for a run that waits only for its owner's next login")
	}
	p2.Warm(ctx, bob, 2)
	if size, inUse, waits := b.Use(); inUse < 2 {
		t.Errorf("bob's warming opened %d sessions of %d (%d runs waiting), want 2", inUse, size, waits)
	}
}

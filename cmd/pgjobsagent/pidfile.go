package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// pidFile is a pid file this process holds: open, locked with flock(2), holding the process id.
type pidFile struct {
	path string
	f    *os.File
}

// acquirePidFile opens path without following a symbolic link (creating it with mode 0644 if missing),
// refuses anything but a regular file with one link, takes an exclusive flock(2) on it without waiting,
// and writes the process id into it. A file that exists but is not locked is stale, left by an agent that
// is gone, and is taken over; a locked one belongs to a running agent, and the error names the file and
// the process id it holds. The lock lasts until release or the process's end, whichever is first.
func acquirePidFile(path string) (*pidFile, error) {
	for range 3 {
		// O_NONBLOCK: opening a FIFO planted at path must fail the checks below, not hang.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o644)
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("pid file %s is a symbolic link; give the path of the file itself", path)
		}
		if err != nil {
			return nil, fmt.Errorf("pid file: %w", err)
		}
		p := &pidFile{path: path, f: f}
		err = p.lockAndWrite()
		if err == nil {
			return p, nil
		}
		f.Close()
		if !errors.Is(err, errReplaced) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("pid file %s: %w three times in a row", path, errReplaced)
}

// errReplaced says that the pid file was removed or replaced between its opening and its locking: the
// agent that held it removed it as it stopped.
var errReplaced = errors.New("removed or replaced while being locked")

// lockAndWrite checks the open file, locks it and writes the process id.
func (p *pidFile) lockAndWrite() error {
	info, err := p.f.Stat()
	if err != nil {
		return fmt.Errorf("pid file %s: %w", p.path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("pid file %s is not a regular file (%s)", p.path, info.Mode().Type())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		return fmt.Errorf("pid file %s has %d hard links; it must be a file of its own", p.path, st.Nlink)
	}
	if err := flock(p.f, syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("pid file %s is locked by %s: another pgjobsagent runs with this pid file", p.path, holder(p.f))
	} else if err != nil {
		return fmt.Errorf("pid file %s: lock: %w", p.path, err)
	}
	if now, err := os.Lstat(p.path); err != nil || !os.SameFile(info, now) {
		return errReplaced
	}
	if info.Mode().Perm() != 0o644 {
		if err := p.f.Chmod(0o644); err != nil {
			return fmt.Errorf("pid file %s: %w", p.path, err)
		}
	}
	if err := p.f.Truncate(0); err != nil {
		return fmt.Errorf("pid file %s: %w", p.path, err)
	}
	if _, err := p.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return fmt.Errorf("pid file %s: %w", p.path, err)
	}
	return nil
}

// flock calls flock(2) on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// holder returns "process PID" with the pid the locked file holds, or "another process" when it holds
// none yet (its holder locks it before it writes).
func holder(f *os.File) string {
	buf := make([]byte, 24)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "another process"
	}
	s := strings.TrimSpace(string(buf[:n]))
	if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
		return "process " + strconv.Itoa(pid)
	}
	return "another process"
}

// release removes the pid file if the path still names the file this process locked (someone may have
// removed it, and another agent created a new one there since), then closes it, which drops the lock.
// The error says why it could not be removed.
func (p *pidFile) release() error {
	defer p.f.Close()
	mine, err := p.f.Stat()
	if err != nil {
		return fmt.Errorf("pid file %s: %w", p.path, err)
	}
	now, err := os.Lstat(p.path)
	if err != nil || !os.SameFile(mine, now) {
		return nil // not ours any more: leave the path alone
	}
	if err := os.Remove(p.path); err != nil {
		return fmt.Errorf("remove the pid file: %w", err)
	}
	return nil
}

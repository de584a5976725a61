//go:build unix

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Update is the only way to change a configuration file. It takes an exclusive flock(2) on path+".lock"
// (created with mode 0644 if missing) and holds it while it loads the file, calls edit and writes the
// result, so that concurrent Updates, in one process or in several, never lose an edit. A missing file
// starts empty. When edit returns nil and the contents changed, Update writes them to a temporary file in
// the same directory, syncs it, gives it the old file's mode and owner (mode 0644 and the caller for a new
// file), renames it over the file and syncs the directory; when nothing changed it writes nothing, and a
// missing file stays missing. A symbolic link at path is followed, not replaced, and the lock is taken
// beside the file it points to.
//
// On any error the file is left as it was and no temporary file remains. The error is a *ParseError when
// the file does not parse, edit's error prefixed with "PATH: ", or "update PATH: " and the step that
// failed. Update returns the file as it now is.
func Update(path string, edit func(*File) error) (*File, error) {
	target, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		target = path
	} else if err != nil {
		return nil, fmt.Errorf("update %s: %w", path, err)
	}
	unlock, err := lock(target + ".lock")
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", path, err)
	}
	defer unlock()

	old, data, err := read(target)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", path, err)
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := edit(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := f.Bytes()
	if bytes.Equal(out, data) {
		return f, nil
	}
	if _, err := Parse(path, out); err != nil {
		return nil, fmt.Errorf("update %s: the edited file would not load: %w", path, err)
	}
	if err := writeAtomic(target, out, old); err != nil {
		return nil, fmt.Errorf("update %s: %w", path, err)
	}
	return f, nil
}

// lock takes an exclusive flock on the file name, creating it if missing, and returns the function that
// releases it.
func lock(name string) (func(), error) {
	// Opened for writing, though flock needs only reading: with mode 0644, only the owner may take the
	// lock, so no other user can hold it to block edits.
	lf, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	fd := int(lf.Fd())
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("lock: flock %s: %w", name, err)
	}
	return func() {
		// Closing the file releases the lock.
		lf.Close()
	}, nil
}

// read returns the file's information and contents, at most MaxFileSize+1 bytes of them (Parse refuses
// more); a missing file has nil information and no contents.
func read(name string) (fs.FileInfo, []byte, error) {
	rf, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	defer rf.Close()
	info, err := rf.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("read: %s is not a regular file", name)
	}
	data, err := readLimited(rf)
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	return info, data, nil
}

// writeAtomic replaces the file name with data through a temporary file in the same directory, giving it
// the mode and owner of old, or mode 0644 when old is nil. On an error before the rename nothing changed
// and the temporary file is gone; an error syncing the directory after the rename means the new contents
// are in place but perhaps not yet durable.
func writeAtomic(name string, data []byte, old fs.FileInfo) (err error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	renamed := false
	defer func() {
		if err != nil && !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	mode := fs.FileMode(0o644)
	if old != nil {
		mode = old.Mode().Perm()
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("chmod temporary file: %w", err)
	}
	if err := keepOwner(tmp, old); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temporary file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("replace file: %w", err)
	}
	renamed = true
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// keepOwner gives tmp the owner and group of old when they differ; it fails when the caller may not.
func keepOwner(tmp *os.File, old fs.FileInfo) error {
	if old == nil {
		return nil
	}
	want, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	info, err := tmp.Stat()
	if err != nil {
		return fmt.Errorf("stat temporary file: %w", err)
	}
	have, ok := info.Sys().(*syscall.Stat_t)
	if !ok || (have.Uid == want.Uid && have.Gid == want.Gid) {
		return nil
	}
	if err := tmp.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return fmt.Errorf("keep the owner %d:%d: %w", want.Uid, want.Gid, err)
	}
	return nil
}

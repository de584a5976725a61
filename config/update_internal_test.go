package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteAtomicRenameFails makes the last step fail, renaming over a directory, and checks that the
// temporary file is gone and the directory untouched.
func TestWriteAtomicRenameFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "pgjobs.conf")
	if err := os.MkdirAll(filepath.Join(target, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeAtomic(target, []byte("master=1\n"), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "replace file: rename ") {
		t.Fatalf("writeAtomic = %v, want a replace file error", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"pgjobs.conf"}) {
		t.Errorf("directory holds %q, want only pgjobs.conf", names)
	}
}

// TestUpdateNotRegularFile checks that a directory at the path is refused before edit runs.
func TestUpdateNotRegularFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pgjobs.conf")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Update(path, func(*File) error { t.Error("edit called"); return nil })
	want := "update " + path + ": read: " + path + " is not a regular file"
	if err == nil || err.Error() != want {
		t.Errorf("Update = %v, want %s", err, want)
	}
}

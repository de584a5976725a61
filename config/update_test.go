package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pgjobs/pgjobs/config"
)

// writeConf writes a configuration file into a new directory and returns its path.
func writeConf(t *testing.T, data string, mode fs.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pgjobs.conf")
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// dirNames lists the names in the directory of path.
func dirNames(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// checkRows checks that the file at path has the databases named want, with unique ids 1..len(want).
func checkRows(t *testing.T, path string, want []string) {
	t.Helper()
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var ids []int
	for _, d := range f.Databases() {
		names = append(names, d.Name)
		ids = append(ids, d.ID)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("databases = %q\nwant %q", names, want)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i+1 {
			t.Fatalf("ids = %v, want 1..%d each once", ids, len(want))
		}
	}
}

func TestUpdateCreatesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pgjobs.conf")
	f, err := config.Update(path, func(f *config.File) error {
		if err := f.SetSystem("0.00"); err != nil {
			return err
		}
		_, err := f.AddDatabase(config.Database{Name: "sales"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = "system=0.00\n1=default|default|sales|0|default|none|none\n"
	if got := string(readFile(t, path)); got != want || string(f.Bytes()) != want {
		t.Errorf("file = %q, returned %q, want %q", got, f.Bytes(), want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", info.Mode().Perm())
	}
	if f.Path() != path {
		t.Errorf("Path() = %q, want %q", f.Path(), path)
	}
	if names := dirNames(t, path); !slices.Equal(names, []string{"pgjobs.conf", "pgjobs.conf.lock"}) {
		t.Errorf("directory holds %q", names)
	}
}

func TestUpdateKeepsModeAndOtherLines(t *testing.T) {
	t.Parallel()
	path := writeConf(t, base, 0o600)
	_, err := config.Update(path, func(f *config.File) error { return f.SetMaster(3) })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(readFile(t, path)), strings.Replace(base, "master=1#", "master=3#", 1); got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", info.Mode().Perm())
	}
}

func TestUpdateWithoutChangeDoesNotWrite(t *testing.T) {
	t.Parallel()
	path := writeConf(t, base, 0o644)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Update(path, func(f *config.File) error { return f.SetSystem("0.00") }); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("an edit that changed nothing replaced the file")
	}
}

func TestUpdateEditError(t *testing.T) {
	t.Parallel()
	path := writeConf(t, base, 0o644)
	boom := errors.New("boom")
	_, err := config.Update(path, func(f *config.File) error {
		if err := f.SetMaster(5); err != nil {
			return err
		}
		if _, err := f.AddDatabase(config.Database{Name: "x"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || err.Error() != path+": boom" {
		t.Errorf("Update = %v, want %s: boom", err, path)
	}
	if got := string(readFile(t, path)); got != base {
		t.Errorf("file changed to %q", got)
	}
	if names := dirNames(t, path); !slices.Equal(names, []string{"pgjobs.conf", "pgjobs.conf.lock"}) {
		t.Errorf("directory holds %q", names)
	}

	// A mutator's own error comes back with the path in front.
	_, err = config.Update(path, func(f *config.File) error { return f.RemoveDatabase(99) })
	if !errors.Is(err, config.ErrNotConfigured) || err.Error() != path+": remove database id 99: not configured" {
		t.Errorf("Update = %v", err)
	}
}

func TestUpdateBadFile(t *testing.T) {
	t.Parallel()
	const bad = "system=0.00\nmaster=9\n"
	path := writeConf(t, bad, 0o644)
	called := false
	_, err := config.Update(path, func(*config.File) error { called = true; return nil })
	if want := path + `:2: master loglevel "9" is out of range 0..5`; err == nil || err.Error() != want {
		t.Errorf("Update = %v, want %s", err, want)
	}
	if called {
		t.Error("edit was called on a file that does not parse")
	}
	if got := string(readFile(t, path)); got != bad {
		t.Errorf("file changed to %q", got)
	}
}

func TestUpdateFollowsSymlink(t *testing.T) {
	t.Parallel()
	real := writeConf(t, base, 0o644)
	link := filepath.Join(t.TempDir(), "pgjobs.conf")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Update(link, func(f *config.File) error { return f.SetMaster(2) }); err != nil {
		t.Fatal(err)
	}
	info, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		t.Error("the symbolic link was replaced by a file")
	}
	if got := string(readFile(t, real)); !strings.Contains(got, "master=2#") {
		t.Errorf("the link's target was not edited: %q", got)
	}
	if _, err := os.Stat(real + ".lock"); err != nil {
		t.Errorf("no lock beside the link's target: %v", err)
	}
}

func TestUpdateKeepsOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	path := writeConf(t, base, 0o640)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Update(path, func(f *config.File) error { return f.SetMaster(2) }); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 65534 || info.Mode().Perm() != 0o640 {
		t.Errorf("owner %d:%d mode %v, want 65534:65534 0640", st.Uid, st.Gid, info.Mode().Perm())
	}
}

func TestUpdateMissingDirectory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "pgjobs.conf")
	_, err := config.Update(path, func(f *config.File) error { return f.SetMaster(1) })
	want := "update " + path + ": lock: open " + path + ".lock: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Update = %v, want %s", err, want)
	}
}

// makeReadOnly makes dir read-only for this process: by its mode, and for root, who ignores modes, with
// the immutable attribute. It skips the test when neither works.
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	writable := func() bool {
		probe := filepath.Join(dir, "probe")
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			return false
		}
		os.Remove(probe)
		return true
	}
	if !writable() {
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s read-only for uid %d: chattr: %v %s", dir, os.Geteuid(), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
			t.Errorf("chattr -i: %v %s", err, out)
		}
	})
	if writable() {
		t.Skipf("cannot make %s read-only", dir)
	}
}

func TestUpdateReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lockFile bool // the lock file exists before the directory becomes read-only
		wantErr  string
	}{
		{name: "lock_file_exists", lockFile: true, wantErr: ": create temporary file: open "},
		{name: "lock_file_missing", lockFile: false, wantErr: ": lock: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeConf(t, base, 0o644)
			if tt.lockFile {
				if _, err := config.Update(path, func(*config.File) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			before := dirNames(t, path)
			makeReadOnly(t, filepath.Dir(path))
			_, err := config.Update(path, func(f *config.File) error { return f.SetMaster(5) })
			if err == nil || !strings.HasPrefix(err.Error(), "update "+path+tt.wantErr) {
				t.Fatalf("Update = %v, want update %s%s...", err, path, tt.wantErr)
			}
			if !errors.Is(err, fs.ErrPermission) {
				t.Errorf("error %v does not wrap fs.ErrPermission", err)
			}
			if got := string(readFile(t, path)); got != base {
				t.Errorf("file changed to %q", got)
			}
			if after := dirNames(t, path); !slices.Equal(before, after) {
				t.Errorf("directory holds %q, held %q", after, before)
			}
		})
	}
}

func TestUpdateConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	const n = 24
	path := writeConf(t, "# shared by many writers\nsystem=0.00\n", 0o644)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var want []string
	for i := range n {
		name := fmt.Sprintf("db%02d", i)
		want = append(want, name)
		wg.Go(func() {
			_, err := config.Update(path, func(f *config.File) error {
				_, err := f.AddDatabase(config.Database{Name: name})
				return err
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	checkRows(t, path, want)
	if got := string(readFile(t, path)); !strings.HasPrefix(got, "# shared by many writers\nsystem=0.00\n") {
		t.Errorf("the first lines changed: %q", got)
	}
	if names := dirNames(t, path); !slices.Equal(names, []string{"pgjobs.conf", "pgjobs.conf.lock"}) {
		t.Errorf("directory holds %q", names)
	}
}

// childEnv names the variable that makes the test binary a writer for TestUpdateConcurrentProcesses:
// PATH:PROCESS:EDITS.
const childEnv = "PGJOBS_CONFIG_TEST_WRITER"

func TestUpdateConcurrentProcesses(t *testing.T) {
	if spec := os.Getenv(childEnv); spec != "" {
		writer(t, spec)
		return
	}
	t.Parallel()
	const processes, edits = 3, 8
	path := writeConf(t, "", 0o644)
	var want []string
	cmds := make([]*exec.Cmd, processes)
	outs := make([]strings.Builder, processes)
	for p := range processes {
		for e := range edits {
			want = append(want, fmt.Sprintf("p%d_e%d", p, e))
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateConcurrentProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d:%d", childEnv, path, p, edits))
		cmd.Stdout, cmd.Stderr = &outs[p], &outs[p]
		cmds[p] = cmd
	}
	for p, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatalf("start writer %d: %v", p, err)
		}
	}
	// The test process writes as well, at the same time.
	for e := range edits {
		name := fmt.Sprintf("parent_e%d", e)
		want = append(want, name)
		_, err := config.Update(path, func(f *config.File) error {
			_, err := f.AddDatabase(config.Database{Name: name})
			return err
		})
		if err != nil {
			t.Error(err)
		}
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %d: %v\n%s", p, err, outs[p].String())
		}
	}
	checkRows(t, path, want)
}

// writer is the child's side of TestUpdateConcurrentProcesses: it adds EDITS databases, one Update each.
func writer(t *testing.T, spec string) {
	i := strings.LastIndexByte(spec, ':')
	j := strings.LastIndexByte(spec[:i], ':')
	path := spec[:j]
	edits, err := strconv.Atoi(spec[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	for e := range edits {
		name := fmt.Sprintf("p%s_e%d", spec[j+1:i], e)
		_, err := config.Update(path, func(f *config.File) error {
			_, err := f.AddDatabase(config.Database{Name: name})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateMissingFileNoChange(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pgjobs.conf")
	f, err := config.Update(path, func(*config.File) error { return nil })
	if err != nil || len(f.Bytes()) != 0 {
		t.Fatalf("Update = %q, %v", f.Bytes(), err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an edit that changed nothing created the file: %v", err)
	}
}

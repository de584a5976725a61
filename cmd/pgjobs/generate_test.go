package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/config"
)

// pgjobs generate writes the files packaging installs: a configuration that parses, with the
// schema version and master=0 and no database, and the man page.
func TestGenerate(t *testing.T) {
	t.Parallel()
	r := runInProcess("generate", "config")
	if r.code != 0 {
		t.Fatalf("generate config: exit %d: %s", r.code, r.stderr)
	}
	f, err := config.Parse("pgjobs.conf", []byte(r.stdout))
	if err != nil {
		t.Fatalf("the configuration of a new install does not parse: %v\n%s", err, r.stdout)
	}
	if f.System() != systemVersion() || f.Master() != 0 || len(f.Databases()) != 0 {
		t.Errorf("new install: system=%s master=%d %d databases, want system=%s master=0 and none", f.System(), f.Master(), len(f.Databases()), systemVersion())
	}
	r = runInProcess("generate", "man")
	if r.code != 0 || !strings.Contains(r.stdout, ".SH NAME") || !strings.Contains(r.stdout, "enabledb") {
		t.Errorf("generate man: exit %d, want a man page naming enabledb:\n%.300s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"generate"}, {"generate", "rpm"}} {
		if r := runInProcess(args...); r.code != exitUsage || !strings.Contains(r.stderr, "man, config or databases") {
			t.Errorf("%v: exit %d, want %d and a message naming man and config: %s", args, r.code, exitUsage, r.stderr)
		}
	}
	conf := filepath.Join(t.TempDir(), "pgjobs.conf")
	if err := os.WriteFile(conf, []byte("system=4.00\nmaster=0\n  3=default|default|sales|0|default|none|none  # indented\n7=/run/pg|5433|b|2|alice|none|none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runInProcess("--config", conf, "generate", "databases")
	if want := "3 default default sales default\n7 /run/pg 5433 b alice\n"; r.code != 0 || r.stdout != want {
		t.Errorf("generate databases: exit %d, %q, want %q: %s", r.code, r.stdout, want, r.stderr)
	}
	if r := runInProcess("--help"); strings.Contains(r.stdout, "generate") {
		t.Errorf("--help lists the packaging command generate:\n%s", r.stdout)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsage: how pgjobs is called, as a newcomer calls it: help, usage errors (exit 2, a one-line
// reason and the usage line), and --config before or after the command.
func TestUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "pgjobs.conf")
	if err := os.WriteFile(conf, []byte("system=3.00\nmaster=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.conf")
	missingDir := filepath.Join(dir, "no", "such", "pgjobs.conf")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a part of it
		stderr     string // all of it, when code != 0
		fileWanted string // a file that must exist afterwards
	}{
		{name: "help", args: []string{"help"}, stdout: "pgjobs help [COMMAND]"},
		{name: "help says -h is the host", args: []string{"--help"}, stdout: "never -h, which is the host"},
		{name: "help of a command", args: []string{"help", "enabledb"}, stdout: "pgjobs enabledb [-h HOST]"},
		{name: "help of no command", args: []string{"help", "nosuch"}, code: 2,
			stderr: "pgjobs: no command 'nosuch'; pgjobs help lists them\nusage: pgjobs help [COMMAND]\n"},
		{name: "no command", args: nil, code: 2, stdout: "COMMANDS:",
			stderr: "pgjobs: no command given\nusage: pgjobs [--config FILE] COMMAND [OPTIONS]\n"},
		{name: "unknown flag", args: []string{"viewdb", "--bogus"}, code: 2,
			stderr: "pgjobs: flag provided but not defined: -bogus; see pgjobs viewdb --help\nusage: pgjobs viewdb [-h HOST] [-p PORT] -d DATABASE\n"},
		{name: "--config before the command", args: []string{"--config", conf, "viewmaster"}, stdout: "master=4\n"},
		{name: "--config after the command", args: []string{"viewmaster", "--config", conf}, stdout: "master=4\n"},
		{name: "--config before an edit", args: []string{"--config", other, "updatemaster", "-l", "2"}, stdout: "master=2\n", fileWanted: other},
		{name: "--config twice, the same", args: []string{"--config", conf, "viewmaster", "--config", conf}, stdout: "master=4\n"},
		{name: "--config twice, two files", args: []string{"--config", conf, "viewmaster", "--config", other}, code: 2,
			stderr: "pgjobs: --config is given twice, as \"" + other + "\" and \"" + conf + "\"\nusage: pgjobs viewmaster\n"},
		{name: "configuration folder missing", args: []string{"--config", missingDir, "updatemaster", "-l", "1"}, code: 1,
			stderr: "pgjobs: updatemaster: update " + missingDir + ": lock: open " + missingDir + ".lock: no such file or directory; the folder " + filepath.Dir(missingDir) + " does not exist: create it, or name a file in a folder you may write with --config FILE or PGJOBS_CONF=FILE\n"},
	}
	for _, tt := range tests {
		got := runBinary(t, []string{"PGJOBS_CONF="}, tt.args...)
		if got.code != tt.code || !strings.Contains(got.stdout, tt.stdout) || (tt.code != 0 && got.stderr != tt.stderr) || (tt.code == 0 && got.stderr != "") {
			t.Errorf("%s: pgjobs %s:\n got %#v\nwant code %d, stdout with %q, stderr %q", tt.name, strings.Join(tt.args, " "), got, tt.code, tt.stdout, tt.stderr)
		}
		if tt.fileWanted != "" {
			if _, err := os.Stat(tt.fileWanted); err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
	}
}

// TestDefaultConfigurationMissing: the first enabledb on a machine without the package says what
// is missing and the two ways forward.
func TestDefaultConfigurationMissing(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/share/pgjobs"); err == nil {
		t.Skip("this machine has /usr/share/pgjobs")
	}
	got := runBinary(t, []string{"PGJOBS_CONF="}, "enabledb", "-d", "sales")
	want := "the folder /usr/share/pgjobs of the default configuration file does not exist: install the pgjobs package, which creates it, or name a file in a folder you may write with --config FILE or PGJOBS_CONF=FILE\n"
	if got.code != 1 || !strings.HasSuffix(got.stderr, want) {
		t.Fatalf("enabledb without the package: %#v", got)
	}
}

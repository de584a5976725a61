package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/internal/authwatch"
)

// TestLoadReadsAtMostTheLimit loads a sparse file of 64 MiB and checks that Load refuses it without
// reading it into memory. It measures the process's allocations, so it does not run in parallel.
func TestLoadReadsAtMostTheLimit(t *testing.T) {
	const size = 64 << 20
	path := filepath.Join(t.TempDir(), "huge.conf")
	hf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := hf.Truncate(size); err != nil { // a sparse file: no disk space, one line of NUL bytes
		t.Fatal(err)
	}
	if err := hf.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		load func() error
	}{
		{name: "Load", load: func() error { _, err := config.Load(path); return err }},
		{name: "Update", load: func() error {
			_, err := config.Update(path, func(*config.File) error { return errors.New("edit called") })
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tt.load()
			runtime.ReadMemStats(&after)
			want := path + ":1: the file is longer than the limit of 1048576 bytes (1 MiB)"
			if err == nil || err.Error() != want {
				t.Errorf("error = %v, want %s", err, want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
				t.Errorf("refusing a %d MiB file allocated %d MiB, want at most 8", size>>20, got>>20)
			}
		})
	}
	if info, err := os.Stat(path); err != nil || info.Size() != size {
		t.Errorf("the file changed: %v, %v", info, err)
	}
}

// TestLimitsAreInclusive: a file of exactly MaxFileSize bytes and a line of exactly MaxLineLength bytes
// load; one byte more is refused by Load, Parse and Update, and Update leaves the file alone.
func TestLimitsAreInclusive(t *testing.T) {
	t.Parallel()
	row := func(n int) string { // a database row of n bytes
		head, tail := "1=default|default|", "|0|default|none"
		return head + strings.Repeat("d", n-len(head)-len(tail)) + tail
	}
	comments := func(n int) string { // n bytes of comment lines of 64 bytes and a shorter last one
		var b strings.Builder
		for b.Len()+64 <= n {
			b.WriteString("#" + strings.Repeat("-", 62) + "\n")
		}
		if rest := n - b.Len(); rest > 0 {
			b.WriteString("#" + strings.Repeat("-", rest-2) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name    string
		data    string
		wantErr string // "" if it loads; after "PATH:"
	}{
		{name: "line_at_limit", data: row(config.MaxLineLength) + "\n"},
		{name: "line_at_limit_without_newline", data: "master=0\n" + row(config.MaxLineLength)},
		{name: "line_past_limit", data: row(config.MaxLineLength+1) + "\n", wantErr: "1: the line has 4097 bytes, more than the limit of 4096"},
		{name: "comment_past_limit", data: "master=0\n#" + strings.Repeat("x", config.MaxLineLength), wantErr: "2: the line has 4097 bytes, more than the limit of 4096"},
		{name: "file_at_limit", data: comments(config.MaxFileSize)},
		{name: "file_past_limit", data: comments(config.MaxFileSize) + "\n", wantErr: "16385: the file is longer than the limit of 1048576 bytes (1 MiB)"},
		{name: "file_past_limit_in_a_line", data: comments(config.MaxFileSize-10) + "master=0 # comment", wantErr: "16385: the file is longer than the limit of 1048576 bytes (1 MiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "pgjobs.conf")
			if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error) {
				t.Helper()
				if tt.wantErr == "" {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					return
				}
				var pe *config.ParseError
				if err == nil || err.Error() != path+":"+tt.wantErr || !errors.As(err, &pe) {
					t.Errorf("%s: error %v, want *ParseError %s:%s", what, err, path, tt.wantErr)
				}
			}
			_, err := config.Load(path)
			check("Load", err)
			_, err = config.Parse(path, []byte(tt.data))
			check("Parse", err)
			_, err = config.Update(path, func(f *config.File) error { return f.SetMaster(0) })
			if tt.wantErr != "" {
				check("Update", err)
				if got, _ := os.ReadFile(path); string(got) != tt.data {
					t.Errorf("Update changed the file")
				}
			}
		})
	}
}

// TestMutatorsKeepTheLimits: a mutator that would write a line or a file past the limits refuses, changes
// nothing, and quotes no value whole.
func TestMutatorsKeepTheLimits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", config.MaxLineLength)
	// A file one line short of MaxFileSize: 64-byte comment lines, then a last line to fill it exactly.
	var b strings.Builder
	b.WriteString("1=default|default|db|0|default|none\n")
	for b.Len()+64 <= config.MaxFileSize-60 {
		b.WriteString("#" + strings.Repeat("-", 62) + "\n")
	}
	b.WriteString("#" + strings.Repeat("-", config.MaxFileSize-b.Len()-2) + "\n")
	full := b.String()
	if len(full) != config.MaxFileSize {
		t.Fatalf("full file has %d bytes", len(full))
	}
	tests := []struct {
		name    string
		data    string
		edit    func(*config.File) error
		wantErr string
	}{
		{
			name:    "add_long_name",
			edit:    func(f *config.File) error { _, err := f.AddDatabase(config.Database{Name: long}); return err },
			wantErr: "add database: the line would have 4134 bytes, more than the limit of 4096",
		},
		{
			name: "update_long_name", data: "7=default|default|db|0|default|none # comment\n",
			edit:    func(f *config.File) error { return f.UpdateDatabase(7, config.Database{Name: long}) },
			wantErr: "update database id 7: the line would have 4144 bytes, more than the limit of 4096",
		},
		{
			name: "update_six_fields_at_the_limit", data: "7=default|default|" + strings.Repeat("d", config.MaxLineLength-len("7=default|default||0|default|none")) + "|0|default|none\n",
			edit: func(f *config.File) error {
				d := f.Databases()[0]
				d.LogLevel = 1
				return f.UpdateDatabase(7, d) // writes the seventh field, "|none"
			},
			wantErr: "update database id 7: the line would have 4101 bytes, more than the limit of 4096",
		},
		{
			name: "add_to_a_full_file", data: full,
			edit:    func(f *config.File) error { _, err := f.AddDatabase(config.Database{Name: "x"}); return err },
			wantErr: "add database: the file would have 1048616 bytes, more than the limit of 1048576",
		},
		{
			name: "set_master_in_a_full_file", data: full,
			edit:    func(f *config.File) error { return f.SetMaster(1) },
			wantErr: "set master: the file would have 1048585 bytes, more than the limit of 1048576",
		},
		{
			name: "long_value_with_a_blank",
			edit: func(f *config.File) error {
				_, err := f.AddDatabase(config.Database{Name: "a b" + long})
				return err
			},
			wantErr: `add database: database "a b` + strings.Repeat("n", 197) + `"... (4099 bytes) contains a blank`,
		},
		{
			name: "long_port",
			edit: func(f *config.File) error {
				_, err := f.AddDatabase(config.Database{Name: "x", Port: strings.Repeat("1", 300)})
				return err
			},
			wantErr: `add database: port "` + strings.Repeat("1", 200) + `"... (300 bytes) is out of range 1..65535`,
		},
		{
			name:    "long_version",
			edit:    func(f *config.File) error { return f.SetSystem(strings.Repeat("1.", 200) + "x") },
			wantErr: `set system: system version "` + strings.Repeat("1.", 100) + `"... (401 bytes) is not numbers separated by dots (e.g. 0.00)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := mustParse(t, tt.data)
			err := tt.edit(f)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error = %v\nwant %s", err, tt.wantErr)
			}
			if got := string(f.Bytes()); got != tt.data {
				t.Errorf("the failed edit changed the file")
			}
		})
	}
}

// ExampleParse_tooLong shows how a value longer than 200 bytes is quoted in an error.
func ExampleParse_tooLong() {
	_, err := config.Parse("pgjobs.conf", []byte("master="+strings.Repeat("7", 250)+"\n"))
	fmt.Println(err)
	// Output:
	// pgjobs.conf:1: master loglevel "77777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777777"... (250 bytes) is out of range 0..5
}

// The file's highest scram_iterations is the agent's: a setting the file accepts is one the agent
// can keep.
func TestMaxScramIterationsIsTheAgents(t *testing.T) {
	if config.MaxScramIterations != authwatch.MaxIterationsLimit {
		t.Fatalf("config.MaxScramIterations %d, authwatch.MaxIterationsLimit %d", config.MaxScramIterations, authwatch.MaxIterationsLimit)
	}
}

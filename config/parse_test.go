package config_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/config"
)

// readFile returns the contents of a test file.
func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// mustParse parses data as pgjobs.conf and fails the test on an error.
func mustParse(t *testing.T, data string) *config.File {
	t.Helper()
	f, err := config.Parse("pgjobs.conf", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	f, err := config.Load("testdata/valid.conf")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.System(); got != "0.00" {
		t.Errorf("System() = %q, want 0.00", got)
	}
	if got := f.Sessions(); got != 40 {
		t.Errorf("Sessions = %d, want 40", got)
	}
	if got := f.ScramIterations(); got != 600000 {
		t.Errorf("ScramIterations = %d, want 600000", got)
	}
	if got := f.Master(); got != 0 {
		t.Errorf("Master() = %d, want 0", got)
	}
	if got := f.Path(); got != "testdata/valid.conf" {
		t.Errorf("Path() = %q", got)
	}
	want := []config.Database{
		{ID: 1234, Host: "default", Port: "default", Name: "MyExamples", LogLevel: 5, User: "default", Notification: "none", Recipient: "none"},
		{ID: 7, Host: "db1,db2", Port: "5433", Name: "sales", LogLevel: 2, User: "jobs", Notification: "none", Recipient: "none"},
		{ID: 8, Host: "/var/run/postgresql", Port: "default", Name: "sales", LogLevel: 0, User: "default", Notification: "mail", Recipient: "ops@example.com"},
		{ID: 9, Host: "localhost", Port: "5433", Name: "sales", LogLevel: 1, User: "default", Notification: "none", Recipient: "none"},
		{ID: 10, Host: "192.168.1.20", Port: "default", Name: "MyExamples", LogLevel: 3, User: "app_user", Notification: "none", Recipient: "none"},
		{ID: 11, Host: "::1", Port: "6543", Name: "MyExamples", LogLevel: 4, User: "postgres", Notification: "none", Recipient: "none"},
	}
	if got := f.Databases(); !reflect.DeepEqual(got, want) {
		t.Errorf("Databases() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseOtherValidFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		file      string
		system    string
		master    config.LogLevel
		databases []string // Line() of each row
	}{
		{name: "crlf_without_final_newline", file: "crlf.conf", system: "1.2.3", master: 5, databases: []string{
			"1=default|default|db|0|default|none|none", "2=default|default|db2|0|default|none|none",
		}},
		{name: "empty", file: "empty.conf"},
		{name: "only_comments_and_blanks", file: "comments.conf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := config.Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if f.System() != tt.system || f.Master() != tt.master {
				t.Errorf("System(), Master() = %q, %d; want %q, %d", f.System(), f.Master(), tt.system, tt.master)
			}
			var lines []string
			for _, d := range f.Databases() {
				lines = append(lines, d.Line())
			}
			if !reflect.DeepEqual(lines, tt.databases) {
				t.Errorf("rows = %q, want %q", lines, tt.databases)
			}
		})
	}
}

// TestParseBad parses each testdata/bad/NAME.conf and compares the error with NAME.err.
func TestParseBad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("found %d malformed cases, want at least 15", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".conf")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := strings.TrimSuffix(string(readFile(t, strings.TrimSuffix(file, ".conf")+".err")), "\n")
			f, err := config.Parse("pgjobs.conf", readFile(t, file))
			if err == nil {
				t.Fatalf("Parse succeeded with %d rows, want error %q", len(f.Databases()), want)
			}
			if err.Error() != want {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
			var pe *config.ParseError
			if !errors.As(err, &pe) || pe.Path != "pgjobs.conf" || pe.Line < 1 {
				t.Errorf("error %#v is not a *ParseError with the path and a line", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q has more than one line", err)
			}
			if strings.Contains(name, "duplicate_target") != errors.Is(err, config.ErrExists) {
				t.Errorf("errors.Is(%q, ErrExists) = %v", err, errors.Is(err, config.ErrExists))
			}
		})
	}
}

// TestRoundTrip checks that Bytes gives back exactly what Parse read.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.conf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
	}{
		{name: "empty", data: ""},
		{name: "newline_only", data: "\n"},
		{name: "no_final_newline", data: "system=0.00\nmaster=1"},
		{name: "comment_without_final_newline", data: "master=1\n# end"},
		{name: "blank_lines_at_end", data: "master=1\n\n\n"},
		{name: "crlf", data: "master=1\r\n\r\n"},
		{name: "trailing_blanks", data: "master=1 \t \n  system=0.00\n"},
		{name: "comment_glued", data: "master=1#x\n1=h|1|d|0|u|n|r##\n"},
		{name: "binary_comment", data: "# \x00\xff\xfe\n"},
	}
	for _, file := range files {
		tests = append(tests, struct{ name, data string }{file, string(readFile(t, file))})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := mustParse(t, tt.data)
			if got := string(f.Bytes()); got != tt.data {
				t.Errorf("Bytes() = %q, want %q", got, tt.data)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "pgjobs.conf")
	_, err := config.Load(missing)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want an error wrapping fs.ErrNotExist", err)
	}
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing) = %v, want the path in the message", err)
	}

	// The message names the path as given.
	_, err = config.Load("testdata/bad/duplicate_id.conf")
	const want = "testdata/bad/duplicate_id.conf:9: duplicate id 12 (first on line 4)"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}
}

func TestDatabaseMethods(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		db     config.Database
		host   string
		port   int
		user   string
		target string
		line   string
	}{
		{
			name: "defaults",
			db:   config.Database{ID: 1234, Host: "default", Port: "default", Name: "MyExamples", LogLevel: 5, User: "default", Notification: "none", Recipient: "none"},
			host: "localhost", port: 5432, user: "postgres", target: "localhost:5432/MyExamples",
			line: "1234=default|default|MyExamples|5|default|none|none",
		},
		{
			name: "empty_means_default",
			db:   config.Database{ID: 1, Name: "sales"},
			host: "localhost", port: 5432, user: "postgres", target: "localhost:5432/sales",
			line: "1=default|default|sales|0|default|none|none",
		},
		{
			name: "explicit",
			db:   config.Database{ID: 7, Host: "db1,db2", Port: "5433", Name: "sales", LogLevel: 2, User: "jobs", Notification: "mail", Recipient: "ops@example.com"},
			host: "db1,db2", port: 5433, user: "jobs", target: "db1,db2:5433/sales",
			line: "7=db1,db2|5433|sales|2|jobs|mail|ops@example.com",
		},
		{
			name: "socket_directory",
			db:   config.Database{ID: 2, Host: "/var/run/postgresql", Port: "5432", Name: "x", User: "default"},
			host: "/var/run/postgresql", port: 5432, user: "postgres", target: "/var/run/postgresql:5432/x",
			line: "2=/var/run/postgresql|5432|x|0|default|none|none",
		},
		{
			name: "invalid_port",
			db:   config.Database{ID: 3, Host: "h", Port: "x", Name: "d", User: "u"},
			host: "h", port: 0, user: "u", target: "h:0/d",
			line: "3=h|x|d|0|u|none|none",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := tt.db
			if got := d.ResolvedHost(); got != tt.host {
				t.Errorf("ResolvedHost() = %q, want %q", got, tt.host)
			}
			if got := d.ResolvedPort(); got != tt.port {
				t.Errorf("ResolvedPort() = %d, want %d", got, tt.port)
			}
			if got := d.ResolvedUser(); got != tt.user {
				t.Errorf("ResolvedUser() = %q, want %q", got, tt.user)
			}
			if got := d.Target(); got != tt.target {
				t.Errorf("Target() = %q, want %q", got, tt.target)
			}
			if got := d.Line(); got != tt.line {
				t.Errorf("Line() = %q, want %q", got, tt.line)
			}
		})
	}
}

func TestFileDatabase(t *testing.T) {
	t.Parallel()
	f, err := config.Load("testdata/valid.conf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		host, port, data string
		wantID           int // 0: not found
	}{
		{name: "all_default_words", host: "default", port: "default", data: "MyExamples", wantID: 1234},
		{name: "empty_means_default", data: "MyExamples", wantID: 1234},
		{name: "resolved_values", host: "localhost", port: "5432", data: "MyExamples", wantID: 1234},
		{name: "host_list", host: "db1,db2", port: "5433", data: "sales", wantID: 7},
		{name: "socket_default_port", host: "/var/run/postgresql", data: "sales", wantID: 8},
		{name: "localhost_other_port", host: "default", port: "5433", data: "sales", wantID: 9},
		{name: "ipv6", host: "::1", port: "6543", data: "MyExamples", wantID: 11},
		{name: "other_address_is_not_localhost", host: "127.0.0.1", data: "MyExamples"},
		{name: "names_are_case_sensitive", data: "myexamples"},
		{name: "wrong_port", port: "5433", data: "MyExamples"},
		{name: "invalid_port", port: "x", data: "MyExamples"},
		{name: "host_list_order_matters", host: "db2,db1", port: "5433", data: "sales"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, ok := f.Database(tt.host, tt.port, tt.data)
			if ok != (tt.wantID != 0) || d.ID != tt.wantID {
				t.Errorf("Database(%q, %q, %q) = %d, %v; want %d", tt.host, tt.port, tt.data, d.ID, ok, tt.wantID)
			}
		})
	}
}

func TestParseLogLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    config.LogLevel
		wantErr string
	}{
		{name: "zero", in: "0", want: 0},
		{name: "max", in: "5", want: config.MaxLogLevel},
		{name: "too_high", in: "6", wantErr: `loglevel "6" is out of range 0..5`},
		{name: "negative", in: "-1", wantErr: `loglevel "-1" is not a number`},
		{name: "leading_zero", in: "01", wantErr: `loglevel "01" has a leading zero`},
		{name: "empty", in: "", wantErr: `loglevel is empty`},
		{name: "word", in: "debug", wantErr: `loglevel "debug" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := config.ParseLogLevel(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("ParseLogLevel(%q) = %d, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || got.String() != tt.in || !got.Valid() {
				t.Errorf("ParseLogLevel(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
	for _, l := range []config.LogLevel{-1, 6} {
		if l.Valid() {
			t.Errorf("LogLevel(%d).Valid() = true", l)
		}
	}
}

func TestResolvePath(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == config.PathVariable {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name   string
		flag   string
		getenv func(string) string
		want   string
	}{
		{name: "flag_wins", flag: "/etc/pgjobs.conf", getenv: env("/srv/pgjobs.conf"), want: "/etc/pgjobs.conf"},
		{name: "environment", getenv: env("/srv/pgjobs.conf"), want: "/srv/pgjobs.conf"},
		{name: "default", getenv: env(""), want: "/usr/share/pgjobs/pgjobs.conf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := config.ResolvePath(tt.flag, tt.getenv); got != tt.want {
				t.Errorf("ResolvePath(%q) = %q, want %q", tt.flag, got, tt.want)
			}
		})
	}
}

// TestResolvePathNilGetenv sets the process's environment, so it does not run in parallel.
func TestResolvePathNilGetenv(t *testing.T) {
	t.Setenv(config.PathVariable, "/from/env.conf")
	if got := config.ResolvePath("", nil); got != "/from/env.conf" {
		t.Errorf("ResolvePath with nil getenv = %q, want /from/env.conf", got)
	}
}

// TestParseCopiesInput checks that the File does not share memory with the caller's slice.
func TestParseCopiesInput(t *testing.T) {
	t.Parallel()
	data := []byte("master=1\n")
	f, err := config.Parse("pgjobs.conf", data)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, "master=2\n")
	if got := f.Bytes(); !bytes.Equal(got, []byte("master=1\n")) || f.Master() != 1 {
		t.Errorf("after changing the input, Bytes() = %q, Master() = %d", got, f.Master())
	}
}

// TestTargetsCompareFields checks that rows whose Target texts happen to be equal are still different
// databases: the comparison is on host, port and name, not on the joined text.
func TestTargetsCompareFields(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "1=a:5432/b|default|c|0|default|none\n2=a|default|b:5432/c|0|default|none\n")
	dbs := f.Databases()
	if len(dbs) != 2 || dbs[0].Target() != dbs[1].Target() {
		t.Fatalf("rows %+v", dbs)
	}
	if d, ok := f.Database("a", "", "b:5432/c"); !ok || d.ID != 2 {
		t.Errorf("Database = %+v, %v; want id 2", d, ok)
	}
}

func TestZeroFile(t *testing.T) {
	t.Parallel()
	var f config.File
	if _, err := f.AddDatabase(config.Database{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := string(f.Bytes()); got != "1=default|default|x|0|default|none|none\n" {
		t.Errorf("Bytes() = %q", got)
	}
}

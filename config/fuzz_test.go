package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/config"
)

// maxSeed is the largest file of testdata used as a seed of FuzzParse: the fuzzer spends its time
// minimizing what it finds in long inputs, and TestParseBad covers the long cases.
const maxSeed = 1 << 10

// maxParseError bounds the length of a Parse error: the path, a line number, a sentence and one value
// quoted to 200 bytes (up to 4 characters each as a \x escape).
const maxParseError = 1024

// FuzzParse checks that Parse never panics, that what it accepts comes back byte for byte from Bytes, that
// its errors are one short line, and that whatever a mutator writes parses again.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*.conf", "testdata/bad/*.conf"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			if len(data) > maxSeed {
				continue
			}
			f.Add(data)
		}
	}
	f.Add([]byte("1=a|1|b|0|c|d|e"))
	f.Add([]byte("\r\n#\n"))
	f.Add([]byte("1=" + strings.Repeat("\xc3\xa9", 150) + " "))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse("pgjobs.conf", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pgjobs.conf:") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line starting with the path", err)
			}
			if len(err.Error()) > maxParseError {
				t.Fatalf("error of %d bytes, want at most %d: %q", len(err.Error()), maxParseError, err)
			}
			return
		}
		if got := file.Bytes(); !bytes.Equal(got, data) {
			t.Fatalf("Bytes() = %q, want %q", got, data)
		}
		dbs := file.Databases()
		edits := []func(*config.File) error{
			func(f *config.File) error { return f.SetSystem("9.8.7") },
			func(f *config.File) error { return f.SetMaster(3) },
			func(f *config.File) error {
				_, err := f.AddDatabase(config.Database{Host: "fuzz1,fuzz2", Port: "6432", Name: "fuzz", LogLevel: 2})
				return err
			},
		}
		for _, d := range dbs[:min(len(dbs), 2)] {
			edits = append(edits,
				func(f *config.File) error {
					d.LogLevel = (d.LogLevel + 1) % (config.MaxLogLevel + 1)
					return f.UpdateDatabase(d.ID, d)
				},
				func(f *config.File) error { return f.RemoveDatabase(d.ID) },
			)
		}
		for i, edit := range edits {
			g, err := config.Parse("pgjobs.conf", data)
			if err != nil {
				t.Fatalf("second Parse: %v", err)
			}
			if err := edit(g); err != nil {
				if !bytes.Equal(g.Bytes(), data) {
					t.Fatalf("edit %d failed (%v) but changed the file", i, err)
				}
				if len(err.Error()) > 2*maxParseError {
					t.Fatalf("edit %d: error of %d bytes, want at most %d: %q", i, len(err.Error()), 2*maxParseError, err)
				}
				continue
			}
			if _, err := config.Parse("pgjobs.conf", g.Bytes()); err != nil {
				t.Fatalf("edit %d wrote %q, which does not parse: %v", i, g.Bytes(), err)
			}
		}
	})
}

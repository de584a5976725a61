package main

import (
	"strings"
	"testing"
)

// nextCases are runs of pgjobs next with their exact output and exit code.
var nextCases = []struct {
	name string
	args []string
	want result
}{
	{"daylight saving gap", []string{"next", "--tz", "Europe/Berlin", "--from", "2026-03-28T12:00:00+01:00", "--count", "3", "D 2:30"},
		result{"2026-03-29T03:00:00+02:00\n2026-03-30T02:30:00+02:00\n2026-03-31T02:30:00+02:00\n", "", 0}},
	{"repeated hour fires at its first pass", []string{"next", "--tz", "America/New_York", "--from", "2026-11-01T05:00:00Z", "--count", "2", "D 1:30"},
		result{"2026-11-01T01:30:00-04:00\n2026-11-02T01:30:00-05:00\n", "", 0}},
	{"asked in the second pass of a repeated hour", []string{"next", "--tz", "America/New_York", "--from", "2026-11-01T06:00:00Z", "--count", "2", "D 1:30"},
		result{"2026-11-02T01:30:00-05:00\n2026-11-03T01:30:00-05:00\n", "", 0}},
	{"UTC prints +00:00", []string{"next", "--tz", "UTC", "--from", "2026-01-31T18:00:00Z", "--count", "2", "D -1 17:30"},
		result{"2026-02-28T17:30:00+00:00\n2026-03-31T17:30:00+00:00\n", "", 0}},
	{"count defaults to one", []string{"next", "--tz", "UTC", "--from", "2026-11-20T00:00:00Z", "w 7 12:00"},
		result{"2026-11-22T12:00:00+00:00\n", "", 0}},
	{"interval from --start", []string{"next", "--tz", "UTC", "--from", "2026-11-20T10:07:30Z", "--start", "2026-11-20T10:00:00Z", "--count", "2", "I 0:05"},
		result{"2026-11-20T10:10:00+00:00\n2026-11-20T10:15:00+00:00\n", "", 0}},
	{"interval from --from by default", []string{"next", "--tz", "UTC", "--from", "2026-11-20T10:07:30Z", "I 0:05"},
		result{"2026-11-20T10:12:30+00:00\n", "", 0}},
	{"never fires again", []string{"next", "--tz", "UTC", "--from", "2026-01-01T00:00:00Z", "--count", "5", "D 2003.12.01 17:30"},
		result{"", "", 0}},
	{"one-off fires once", []string{"next", "--tz", "UTC", "--from", "2003-01-01T00:00:00Z", "--count", "5", "D 2003.12.01 17:30"},
		result{"2003-12-01T17:30:00+00:00\n", "", 0}},
	{"invalid schedule", []string{"next", "--tz", "UTC", "D 25:00"},
		result{"", "pgjobs: invalid schedule \"D 25:00\": 1:3: hour 25 is out of range 0..23\n", 1}},
	{"schedule never fires", []string{"next", "D 02.30 10:00"},
		result{"", "pgjobs: invalid schedule \"D 02.30 10:00\": 1:3: month 2 has no day 30\n", 1}},
	{"no schedule", []string{"next"},
		result{"", "pgjobs: next takes one SCHEDULE argument, quoted, such as pgjobs next 'D -1 17:30' (got 0 arguments)\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"unquoted schedule", []string{"next", "D", "17:30"},
		result{"", "pgjobs: next takes one SCHEDULE argument, quoted, such as pgjobs next 'D -1 17:30' (got 2 arguments)\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"unknown zone", []string{"next", "--tz", "Mars/Olympus", "D 1:00"},
		result{"", "pgjobs: --tz \"Mars/Olympus\" is not a known IANA time zone\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"bad from", []string{"next", "--from", "yesterday", "D 1:00"},
		result{"", "pgjobs: --from \"yesterday\" is not an RFC 3339 time such as 2026-03-29T03:00:00+02:00\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"bad start", []string{"next", "--start", "2026-01-01", "I 1"},
		result{"", "pgjobs: --start \"2026-01-01\" is not an RFC 3339 time such as 2026-03-29T03:00:00+02:00\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"bad count", []string{"next", "--count", "0", "D 1:00"},
		result{"", "pgjobs: --count 0: must be 1 or more\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"unknown flag", []string{"next", "--bogus", "D 1:00"},
		result{"", "pgjobs: flag provided but not defined: -bogus; see pgjobs next --help\nusage: pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE\n", 2}},
	{"unknown command", []string{"nexts"},
		result{"", "pgjobs: unknown command \"nexts\"; see pgjobs --help\nusage: pgjobs [--config FILE] COMMAND [OPTIONS]\n", 2}},
}

func TestNextCommand(t *testing.T) {
	t.Parallel()
	for _, tt := range nextCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := runBinary(t, nil, tt.args...); got != tt.want {
				t.Fatalf("pgjobs %q:\n got %#v\nwant %#v", tt.args, got, tt.want)
			}
		})
	}
}

// TestNextCommandInProcess runs the same cases through run, one at a time: urfave/cli's help flag
// is one shared value that every run writes to.
func TestNextCommandInProcess(t *testing.T) {
	for _, tt := range nextCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := runInProcess(tt.args...); got != tt.want {
				t.Fatalf("run(%q):\n got %#v\nwant %#v", tt.args, got, tt.want)
			}
		})
	}
}

func TestNextDefaultsToLocalZoneAndNow(t *testing.T) {
	t.Parallel()
	got := runBinary(t, []string{"TZ=Asia/Kathmandu"}, "next", "--count", "2", "D 05")
	lines := strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n")
	if got.code != 0 || len(lines) != 2 {
		t.Fatalf("got %#v", got)
	}
	for _, line := range lines {
		if !strings.HasSuffix(line, ":05:00+05:45") {
			t.Errorf("%q is not minute 5 in Kathmandu (+05:45)", line)
		}
	}
}

func TestHelpAndVersionAreLongFlagsOnly(t *testing.T) {
	t.Parallel()
	if got := runBinary(t, nil, "--version"); got.code != 0 || !strings.HasPrefix(got.stdout, "pgjobs version ") {
		t.Errorf("--version: %#v", got)
	}
	if got := runBinary(t, nil, "next", "--help"); got.code != 0 || !strings.Contains(got.stdout, "pgjobs next 'D -1 17:30'") {
		t.Errorf("next --help has no example: %#v", got)
	}
	if got := runBinary(t, nil, "-v"); got.code != 2 {
		t.Errorf("-v is not a version flag: %#v", got)
	}
	if got := runBinary(t, nil); got.code != 2 || !strings.Contains(got.stdout, "next") {
		t.Errorf("no command: %#v", got)
	}
}

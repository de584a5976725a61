package jobs

import "testing"

// TestJobRef: a job's name in the log is quoted with its owner's, so that a role's job named to
// read like a line about another's (spaces, "failed:", a blank that prints as nothing, a quote)
// cannot pass for it: each name below reads differently from alice's Backup.
func TestJobRef(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, owner, want string }{
		{"Backup", "alice", `"Backup" of "alice"`},
		{"Backup", "mallory", `"Backup" of "mallory"`},
		{"Backup ", "mallory", `"Backup " of "mallory"`},
		{"Backup\u3164", "mallory", "\"Backup\u3164\" of \"mallory\""},
		{"Backup failed: disk full", "mallory", `"Backup failed: disk full" of "mallory"`},
		{`Backup" of "alice`, "mallory", `"Backup"" of ""alice" of "mallory"`},
	} {
		if got := jobRef(tt.name, tt.owner); got != tt.want {
			t.Errorf("jobRef(%q, %q) = %s, want %s", tt.name, tt.owner, got, tt.want)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAgentHonoursTheLibpqEnvironment: what a configuration row does not say (here the SSL mode)
// comes from the libpq variables of the agent's environment.
func TestAgentHonoursTheLibpqEnvironment(t *testing.T) {
	t.Parallel()
	db, _ := enabled(t, 0)
	conf := filepath.Join(t.TempDir(), "tcp.conf")
	text := fmt.Sprintf("system=1.00\nmaster=0\n1=127.0.0.1|%d|%s|0|%s|none\n", cluster.Port(), db, cluster.User())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env  string
		code int
		want string
	}{
		{"PGSSLMODE=disable", 0, "agent 1 (127.0.0.1:" + strconv.Itoa(cluster.Port()) + "/" + db + "): ok"},
		{"PGSSLMODE=require", 1, "TLS"}, // the test server has no SSL
	} {
		cmd := exec.Command(binary, "--check-config", "--config", conf)
		cmd.Env = append(os.Environ(), tt.env)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tt.code || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", tt.env, cmd.ProcessState.ExitCode(), tt.code, tt.want, out)
		}
	}
}

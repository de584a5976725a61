package agentlog_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/pgjobs/pgjobs/agent/agentlog"
)

func Example() {
	root, err := os.MkdirTemp("", "pgjobs-log")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)

	var level slog.LevelVar
	level.Set(agentlog.MinLevel(2)) // the agent's configured log level; Set again on reload
	h, err := agentlog.New(agentlog.Options{
		Dir: root, Agent: "1234", Level: &level, Location: time.UTC, MaxAge: 30, Also: os.Stdout,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	// slog.Logger stamps records with time.Now(); a fixed time keeps the output stable.
	r := slog.NewRecord(time.Date(2003, 6, 23, 14, 5, 9, 123456789, time.UTC), agentlog.LevelInfo, "job fired", 0)
	r.Add("status", "firing", "job", 17, slog.Group("db", "host", "localhost"), "cmd", "VACUUM pgbench_history")
	if h.Enabled(context.Background(), r.Level) {
		if err := h.Handle(context.Background(), r); err != nil {
			fmt.Println(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		fmt.Println(rel)
	}
	// Output:
	// 2003.06.23|14:05:09.123|firing|job fired job=17 db.host=localhost cmd="VACUUM pgbench_history"
	// 1234/2003.06.23.log
}

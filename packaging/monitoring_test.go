package packaging_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// The monitoring test checks packaging/monitoring: the alert rules and the dashboard use only the
// metrics the agent exports, and are well formed. With promtool (on PATH, or in the repository's
// .tools/ where scripts/promtool puts it) it also runs promtool check rules and the rules' unit
// tests, and checks the dashboard's queries parse.

const (
	alertsFile     = "monitoring/pgjobs-alerts.yml"
	alertsTestFile = "monitoring/pgjobs-alerts.test.yml"
	dashboardFile  = "monitoring/pgjobs-dashboard.json"
	dashboardDS    = "${DS_PROMETHEUS}"
)

func TestMonitoringPromtool(t *testing.T) {
	t.Parallel()
	promtool := findPromtool()
	if promtool == "" {
		t.Skip("promtool not found on PATH nor in ../.tools (scripts/promtool downloads it)")
	}
	t.Logf("using %s", promtool)
	promtoolRun(t, promtool, "check", "rules", alertsFile)
	promtoolRun(t, promtool, "test", "rules", alertsTestFile)

	// The dashboard's queries, with Grafana's variables replaced, as recording rules.
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "$database", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, p := range readDashboard(t).Panels {
		for _, target := range p.Targets {
			fmt.Fprintf(&rules, "      - record: dashboard_panel_%d_%s\n        expr: %s\n", p.ID, target.RefID,
				strconv.Quote(vars.Replace(target.Expr)))
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtoolRun(t, promtool, "check", "rules", file)
}

// findPromtool returns the path of promtool, or "" when there is none.
func findPromtool() string {
	if path, err := exec.LookPath("promtool"); err == nil {
		return path
	}
	path, err := filepath.Abs(filepath.Join("..", ".tools", "promtool"))
	if err != nil {
		return ""
	}
	if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
		return path
	}
	return ""
}

// promtoolRun runs promtool with args and fails the test when it exits non-zero.
func promtoolRun(t *testing.T, promtool string, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), promtool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestMonitoringRules(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	err = yaml.Unmarshal(src, &doc)
	if err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	groups := yamlList(t, yamlMap(t, doc, "the document")["groups"], "groups")
	if len(groups) != 1 {
		t.Fatalf("want one rule group, got %d", len(groups))
	}
	group := yamlMap(t, groups[0], "the group")
	if group["name"] != "pgjobs" {
		t.Errorf("the group is named %q, want pgjobs", group["name"])
	}
	rules := yamlList(t, group["rules"], "rules")
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	seen := map[string]bool{}
	for i, r := range rules {
		rule := yamlMap(t, r, fmt.Sprintf("rule %d", i+1))
		name, _ := rule["alert"].(string)
		if name == "" {
			t.Errorf("rule %d: no alert name", i+1)
			name = fmt.Sprintf("rule %d", i+1)
		}
		if seen[name] {
			t.Errorf("%s: a second alert of that name", name)
		}
		seen[name] = true
		for key := range rule {
			if !slices.Contains([]string{"alert", "expr", "for", "labels", "annotations"}, key) {
				t.Errorf("%s: unexpected key %q", name, key)
			}
		}
		if d, _ := rule["for"].(string); !regexp.MustCompile(`^([0-9]+[smhdwy])+$`).MatchString(d) {
			t.Errorf("%s: for is %q, want a duration such as 5m", name, rule["for"])
		}
		labels := yamlMap(t, rule["labels"], name+": labels")
		if severity, _ := labels["severity"].(string); !slices.Contains([]string{"critical", "warning", "info"}, severity) {
			t.Errorf("%s: labels.severity is %q, want critical, warning or info", name, labels["severity"])
		}
		annotations := yamlMap(t, rule["annotations"], name+": annotations")
		for _, key := range []string{"summary", "description"} {
			if s, _ := annotations[key].(string); strings.TrimSpace(s) == "" {
				t.Errorf("%s: no annotations.%s", name, key)
			}
		}
		expr, _ := rule["expr"].(string)
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s: no expr", name)
			continue
		}
		if err := checkMetrics(expr); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// yamlMap returns v as a mapping with string keys, failing the test when it is not one.
func yamlMap(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[any]any)
	if !ok {
		t.Fatalf("%s: want a mapping, got %T", what, v)
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		key, ok := k.(string)
		if !ok {
			t.Fatalf("%s: the key %v is not a string", what, k)
		}
		out[key] = v
	}
	return out
}

// yamlList returns v as a sequence, failing the test when it is not one.
func yamlList(t *testing.T, v any, what string) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: want a sequence, got %T", what, v)
	}
	return l
}

// dashboard is what the test reads of the Grafana dashboard.
type dashboard struct {
	SchemaVersion int    `json:"schemaVersion"`
	UID           string `json:"uid"`
	Title         string `json:"title"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// readDashboard decodes the dashboard, failing the test when it is not valid JSON.
func readDashboard(t *testing.T) dashboard {
	t.Helper()
	src, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func TestMonitoringDashboard(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	if d.SchemaVersion < 36 || d.UID == "" || d.Title == "" {
		t.Errorf("want a uid, a title and schemaVersion >= 36, got %q, %q, %d", d.UID, d.Title, d.SchemaVersion)
	}
	usesDS := func(ds *datasourceRef) bool { return ds != nil && ds.Type == "prometheus" && ds.UID == dashboardDS }
	var hasDS, hasDatabase bool
	for _, v := range d.Templating.List {
		switch v.Name {
		case strings.Trim(dashboardDS, "${}"):
			hasDS = v.Type == "datasource" && string(v.Query) == `"prometheus"`
		case "database":
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Errorf("variable database: query: %v", err)
			}
			m := regexp.MustCompile(`^label_values\((\w+), *database\)$`).FindStringSubmatch(q.Query)
			hasDatabase = v.Type == "query" && usesDS(v.Datasource) && m != nil
			if m != nil && !allowedMetric(m[1]) {
				t.Errorf("variable database: unknown metric %q", m[1])
			}
		}
	}
	if !hasDS {
		t.Errorf("want a variable %s of type datasource for prometheus", strings.Trim(dashboardDS, "${}"))
	}
	if !hasDatabase {
		t.Errorf("want a variable database of type query: label_values(METRIC, database) from %s", dashboardDS)
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 {
			t.Errorf("%s: want an id > 0", name)
		} else if other, ok := ids[p.ID]; ok {
			t.Errorf("%s: the id of panel %q too", name, other)
		}
		ids[p.ID] = p.Title
		if strings.TrimSpace(p.Title) == "" {
			t.Errorf("%s: no title", name)
		}
		if !usesDS(p.Datasource) {
			t.Errorf("%s: the datasource is %+v, want the variable %s", name, p.Datasource, dashboardDS)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", name)
		}
		refs := map[string]bool{}
		for _, target := range p.Targets {
			if target.RefID == "" || refs[target.RefID] {
				t.Errorf("%s: refId %q missing or repeated", name, target.RefID)
			}
			refs[target.RefID] = true
			if target.Datasource != nil && !usesDS(target.Datasource) {
				t.Errorf("%s, target %s: the datasource is %+v, want the variable %s", name, target.RefID, target.Datasource, dashboardDS)
			}
			if strings.TrimSpace(target.Expr) == "" {
				t.Errorf("%s, target %s: no expr", name, target.RefID)
			} else if err := checkMetrics(target.Expr); err != nil {
				t.Errorf("%s, target %s: %v", name, target.RefID, err)
			}
		}
	}
}

func TestMonitoringMetricNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, expr string
		want       []string
		err        string
	}{
		{name: "selector", expr: `up{job="pgjobs"} == 0`, want: []string{"up"}},
		{name: "labels and by lists", expr: `sum by (database, job_name) (increase(pgjobs_job_runs_total{status=~"error|a}b"}[15m])) > 0`,
			want: []string{"pgjobs_job_runs_total"}},
		{name: "by after the arguments", expr: `sum(rate(pgjobs_tasks_ended_total[5m])) without (state)`, want: []string{"pgjobs_tasks_ended_total"}},
		{name: "histogram", expr: "histogram_quantile(0.99,\n sum by (le) (rate(pgjobs_job_start_delay_seconds_bucket[$__rate_interval])))",
			want: []string{"pgjobs_job_start_delay_seconds_bucket"}},
		{name: "matching and offset", expr: `pgjobs_job_runs_total unless on (database) pgjobs_job_runs_total offset 15m`,
			want: []string{"pgjobs_job_runs_total", "pgjobs_job_runs_total"}},
		{name: "group_left and strings", expr: `pgjobs_tasks * on (id) group_left (version) label_replace(pgjobs_build_info, "x", "$1", "y", "(.*)")`,
			want: []string{"pgjobs_tasks", "pgjobs_build_info"}},
		{name: "numbers and functions", expr: `count(x) or vector(0) > 1e3 + 0x1F`, want: []string{"x"}},
		{name: "misspelled metric", expr: `pgjobs_databse_up == 0`, err: `unknown metric "pgjobs_databse_up"`},
		{name: "histogram without a suffix", expr: `rate(pgjobs_task_run_duration_seconds[5m])`,
			err: `histogram "pgjobs_task_run_duration_seconds" without _bucket, _sum or _count`},
		{name: "unknown function", expr: `rat(pgjobs_tasks_ended_total[5m])`, err: `unknown function "rat"`},
		{name: "unclosed brace", expr: `up{job="pgjobs"`, err: `unclosed {`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := promqlMetrics(tt.expr)
			if err == nil && tt.err != "" {
				err = checkMetrics(tt.expr)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("want an error with %q, got %v", tt.err, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

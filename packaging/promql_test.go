package packaging_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pgjobs/pgjobs/internal/metrics"
)

// The metric names a PromQL expression selects, for the monitoring test.

// histograms are the agent's histograms: their series are NAME_bucket, NAME_sum and NAME_count.
var histograms = []string{metrics.NameJobStartDelay, metrics.NameJobRunDuration, metrics.NameTaskQueueWait,
	metrics.NameTaskRunDuration}

// allowedMetric reports whether the dashboard and the rules may select name: up, a metric of the
// agent, or a series of one of its histograms.
func allowedMetric(name string) bool {
	if name == "up" || (slices.Contains(metrics.Names(), name) && !slices.Contains(histograms, name)) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(histograms, base) {
			return true
		}
	}
	return false
}

// checkMetrics returns an error naming the first metric expr selects that allowedMetric refuses.
func checkMetrics(expr string) error {
	names, err := promqlMetrics(expr)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("selects no metric: %s", expr)
	}
	for _, name := range names {
		switch {
		case slices.Contains(histograms, name):
			return fmt.Errorf("histogram %q without _bucket, _sum or _count selects nothing", name)
		case !allowedMetric(name):
			return fmt.Errorf("unknown metric %q (not in internal/metrics.Names())", name)
		}
	}
	return nil
}

// promqlAggregations are PromQL's aggregation operators: before "(" or a by or without clause.
var promqlAggregations = strings.Fields(`sum min max avg group stddev stdvar count count_values bottomk topk
	quantile limitk limit_ratio`)

// promqlFunctions are PromQL's functions: an identifier before "(" that is no aggregation must be one.
var promqlFunctions = strings.Fields(`
	abs absent absent_over_time acos acosh asin asinh atan atanh ceil changes clamp clamp_max clamp_min
	cos cosh day_of_month day_of_week day_of_year days_in_month deg delta deriv
	double_exponential_smoothing end exp floor histogram_avg histogram_count histogram_fraction
	histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase
	info irate label_join label_replace last_over_time ln log10 log2 mad_over_time max_over_time
	min_over_time minute month pi predict_linear present_over_time quantile_over_time rad rate resets
	round scalar sgn sin sinh sort sort_by_label sort_by_label_desc sort_desc sqrt start
	stddev_over_time stdvar_over_time sum_over_time avg_over_time count_over_time tan tanh time
	timestamp vector year`)

// promqlLabelLists are the keywords followed by a list of label names in parentheses.
var promqlLabelLists = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// promqlKeywords are the other words of PromQL that are no metric.
var promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}

// promqlMetrics returns the metric names expr selects, in order: the identifiers that are neither
// functions, keywords, label names (inside {...} and label lists), strings, numbers, durations nor
// Grafana variables. It returns an error for an unknown function or an unbalanced bracket.
func promqlMetrics(expr string) ([]string, error) {
	var names []string
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
	}
	// skip returns the index after the bracket that closes the one at i, skipping strings.
	skip := func(i int, closing byte) (int, error) {
		open := expr[i]
		for i++; i < len(expr); i++ {
			switch c := expr[i]; {
			case c == closing:
				return i + 1, nil
			case c == open:
				return 0, fmt.Errorf("nested %c at offset %d", open, i)
			case c == '"' || c == '\'' || c == '`':
				end, err := skipString(expr, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			}
		}
		return 0, fmt.Errorf("unclosed %c in %s", open, expr)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{':
			end, err := skip(i, '}')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '[':
			end, err := skip(i, ']')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '$':
			// A Grafana variable: $name or ${name}.
			i++
			if i < len(expr) && expr[i] == '{' {
				end, err := skip(i, '}')
				if err != nil {
					return nil, err
				}
				i = end
			}
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
		case '0' <= c && c <= '9' || c == '.':
			// A number or a duration: 0.99, 1e3, 0x1F, 15m, 1h30m.
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			start := i
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
			word := expr[start:i]
			next := i
			for next < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[next])) {
				next++
			}
			paren := next < len(expr) && expr[next] == '('
			grouped := false // followed by by or without
			for _, w := range []string{"by", "without"} {
				after, ok := strings.CutPrefix(expr[next:], w)
				grouped = grouped || ok && (after == "" || !isIdent(after[0], false))
			}
			switch {
			case slices.Contains(promqlLabelLists, word):
				if paren {
					end, err := skip(next, ')')
					if err != nil {
						return nil, err
					}
					i = end
				}
			case slices.Contains(promqlKeywords, strings.ToLower(word)):
			case slices.Contains(promqlAggregations, word) && (paren || grouped):
			case paren:
				if !slices.Contains(promqlFunctions, word) {
					return nil, fmt.Errorf("unknown function %q", word)
				}
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names, nil
}

// skipString returns the index after the string that starts at expr[i] (a ", ' or ` quote).
func skipString(expr string, i int) (int, error) {
	quote := expr[i]
	for j := i + 1; j < len(expr); j++ {
		switch {
		case expr[j] == '\\' && quote != '`':
			j++
		case expr[j] == quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unclosed string at offset %d", i)
}

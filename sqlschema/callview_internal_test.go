package sqlschema

import (
	"fmt"
	"strings"
	"testing"
)

func TestOwnerBatches(t *testing.T) {
	t.Parallel()
	many := make([]string, CallViewsDropMax+1)
	for i := range many {
		many[i] = fmt.Sprintf("a.%d", i)
	}
	for _, c := range []struct {
		name  string
		views []string
		start int
		want  string // the batches, each its first and last view
	}{
		{"none", nil, 3, ""},
		{"one schema", strings.Fields("a.1 a.2 a.3"), 1, "a.1-a.3"},
		{"in the order the schemas come", strings.Fields("c.1 c.2 a.1 b.1 b.2 a.2"), 0, "c.1-c.2 a.1-a.2 b.1-b.2"},
		{"starting at the second schema", strings.Fields("c.1 c.2 a.1 b.1 b.2 a.2"), 1, "a.1-a.2 b.1-b.2 c.1-c.2"},
		{"starting past the last schema", strings.Fields("c.1 c.2 a.1 b.1 b.2 a.2"), 5, "b.1-b.2 c.1-c.2 a.1-a.2"},
		{"a schema over the maximum takes its second turn last", append(many, "b.1"), 0, fmt.Sprintf("a.0-a.%d b.1-b.1 a.%d-a.%d", CallViewsDropMax-1, CallViewsDropMax, CallViewsDropMax)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, b := range ownerBatches(c.views, c.start) {
				got = append(got, b[0]+"-"+b[len(b)-1])
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("ownerBatches = %s, want %s", strings.Join(got, " "), c.want)
			}
		})
	}
}

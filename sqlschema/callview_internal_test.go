package sqlschema

import (
	"strings"
	"testing"
)

func TestInTurns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, views, want string }{
		{"none", "", ""},
		{"one schema", "a.1 a.2 a.3", "a.1 a.2 a.3"},
		{"two, uneven", "a.1 a.2 a.3 b.1", "a.1 b.1 a.2 a.3"},
		{"three, in the order they come", "c.1 c.2 a.1 b.1 b.2 a.2", "c.1 a.1 b.1 c.2 a.2 b.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(inTurns(strings.Fields(c.views)), " "); got != c.want {
				t.Errorf("inTurns(%s) = %s, want %s", c.views, got, c.want)
			}
		})
	}
}

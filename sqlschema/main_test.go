package sqlschema_test

import (
	"os"
	"testing"

	"github.com/pgjobs/pgjobs/internal/pgtest"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }

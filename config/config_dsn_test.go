package config

import "testing"

func TestDatabaseDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		db   Database
		want string
	}{
		{"defaults", Database{Host: Default, Port: Default, Name: "sales", User: Default},
			"host=localhost port=5432 dbname=sales user=postgres connect_timeout=10"},
		{"socket directory and quoting", Database{Host: "/tmp/pg dir", Port: "6432", Name: "it's", User: "jobs"},
			`host='/tmp/pg dir' port=6432 dbname='it\'s' user=jobs connect_timeout=10`},
		{"host list follows the primary", Database{Host: "db1,db2", Port: "5432", Name: "b", User: "u"},
			"host=db1,db2 port=5432 dbname=b user=u connect_timeout=10 target_session_attrs=read-write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.db.DSN(); got != tt.want {
				t.Fatalf("DSN() = %q, want %q", got, tt.want)
			}
		})
	}
}

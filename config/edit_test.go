package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/config"
)

// base is the file most mutator tests start from.
const base = `# pgjobs
system=0.00   # installed version

master=1#errors and essentials
# sales
3=default|default|sales|0|default|none
  12=db1,db2|5433|orders|2|jobs|none|none	# two hosts
# trailing comment
`

// checkReparse fails the test when f's bytes do not parse to the same settings.
func checkReparse(t *testing.T, f *config.File) {
	t.Helper()
	g, err := config.Parse(f.Path(), f.Bytes())
	if err != nil {
		t.Fatalf("the edited file does not parse: %v\n%s", err, f.Bytes())
	}
	if g.System() != f.System() || g.Master() != f.Master() || !reflect.DeepEqual(g.Databases(), f.Databases()) {
		t.Errorf("reparsed settings differ:\n%q %d %+v\n%q %d %+v",
			f.System(), f.Master(), f.Databases(), g.System(), g.Master(), g.Databases())
	}
}

func TestMutators(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		edit func(*config.File) error
		want string
	}{
		{
			name: "set_system_keeps_comment",
			in:   base,
			edit: func(f *config.File) error { return f.SetSystem("1.2.3") },
			want: strings.Replace(base, "system=0.00   # installed", "system=1.2.3   # installed", 1),
		},
		{
			name: "set_system_appends_when_missing",
			in:   "# no system yet\nmaster=0\n",
			edit: func(f *config.File) error { return f.SetSystem("0.00") },
			want: "# no system yet\nmaster=0\nsystem=0.00\n",
		},
		{
			name: "set_system_empty_file",
			in:   "",
			edit: func(f *config.File) error { return f.SetSystem("0.00") },
			want: "system=0.00\n",
		},
		{
			name: "set_system_without_final_newline",
			in:   "master=0",
			edit: func(f *config.File) error { return f.SetSystem("0.01") },
			want: "master=0\nsystem=0.01\n",
		},
		{
			name: "set_system_same_value",
			in:   base,
			edit: func(f *config.File) error { return f.SetSystem("0.00") },
			want: base,
		},
		{
			name: "set_master_glued_comment",
			in:   base,
			edit: func(f *config.File) error { return f.SetMaster(5) },
			want: strings.Replace(base, "master=1#errors", "master=5#errors", 1),
		},
		{
			name: "set_master_indented",
			in:   "\t master=1  # x\r\n",
			edit: func(f *config.File) error { return f.SetMaster(0) },
			want: "\t master=0  # x\r\n",
		},
		{
			name: "set_master_appends_crlf",
			in:   "system=0.00\r\n",
			edit: func(f *config.File) error { return f.SetMaster(2) },
			want: "system=0.00\r\nmaster=2\r\n",
		},
		{
			name: "add_gets_highest_plus_one",
			in:   base,
			edit: func(f *config.File) error {
				d, err := f.AddDatabase(config.Database{Name: "stock"})
				if err == nil && d.ID != 13 {
					return errors.New("wrong id")
				}
				return err
			},
			want: base + "13=default|default|stock|0|default|none|none\n",
		},
		{
			name: "add_first_gets_one",
			in:   "# empty\n",
			edit: func(f *config.File) error {
				d, err := f.AddDatabase(config.Database{Host: "db", Port: "5433", Name: "x", LogLevel: 3, User: "u", Notification: "n", Recipient: "r"})
				if err == nil && d.ID != 1 {
					return errors.New("wrong id")
				}
				return err
			},
			want: "# empty\n1=db|5433|x|3|u|n|r\n",
		},
		{
			name: "add_with_id",
			in:   base,
			edit: func(f *config.File) error {
				_, err := f.AddDatabase(config.Database{ID: 5, Host: "localhost", Port: "5433", Name: "sales"})
				return err
			},
			want: base + "5=localhost|5433|sales|0|default|none|none\n",
		},
		{
			name: "add_same_name_other_host",
			in:   "3=default|default|sales|0|default|none",
			edit: func(f *config.File) error {
				_, err := f.AddDatabase(config.Database{Host: "db9", Name: "sales"})
				return err
			},
			want: "3=default|default|sales|0|default|none\n4=db9|default|sales|0|default|none|none\n",
		},
		{
			name: "update_keeps_indent_and_comment",
			in:   base,
			edit: func(f *config.File) error {
				return f.UpdateDatabase(12, config.Database{Host: "db1,db2", Port: "5433", Name: "orders", LogLevel: 5, User: "jobs"})
			},
			want: strings.Replace(base, "  12=db1,db2|5433|orders|2|jobs|none|none\t#", "  12=db1,db2|5433|orders|5|jobs|none|none\t#", 1),
		},
		{
			name: "update_six_fields_becomes_seven",
			in:   base,
			edit: func(f *config.File) error {
				return f.UpdateDatabase(3, config.Database{ID: 3, Host: "default", Port: "default", Name: "sales", LogLevel: 4, User: "default", Notification: "none"})
			},
			want: strings.Replace(base, "3=default|default|sales|0|default|none\n", "3=default|default|sales|4|default|none|none\n", 1),
		},
		{
			name: "update_moves_target",
			in:   base,
			edit: func(f *config.File) error {
				return f.UpdateDatabase(3, config.Database{Host: "newhost", Port: "6000", Name: "sales2", User: "bob"})
			},
			want: strings.Replace(base, "3=default|default|sales|0|default|none\n", "3=newhost|6000|sales2|0|bob|none|none\n", 1),
		},
		{
			name: "update_to_own_target_spelled_differently",
			in:   base,
			edit: func(f *config.File) error {
				return f.UpdateDatabase(3, config.Database{Host: "localhost", Port: "5432", Name: "sales"})
			},
			want: strings.Replace(base, "3=default|default|sales|0|default|none\n", "3=localhost|5432|sales|0|default|none|none\n", 1),
		},
		{
			name: "remove_keeps_comment_above",
			in:   base,
			edit: func(f *config.File) error { return f.RemoveDatabase(3) },
			want: strings.Replace(base, "3=default|default|sales|0|default|none\n", "", 1),
		},
		{
			name: "remove_last_line_without_newline",
			in:   "# one\n1=default|default|a|0|default|none",
			edit: func(f *config.File) error { return f.RemoveDatabase(1) },
			want: "# one\n",
		},
		{
			name: "remove_only_line",
			in:   "1=default|default|a|0|default|none\n",
			edit: func(f *config.File) error { return f.RemoveDatabase(1) },
			want: "",
		},
		{
			name: "remove_then_add_reuses_nothing_lower",
			in:   base,
			edit: func(f *config.File) error {
				if err := f.RemoveDatabase(12); err != nil {
					return err
				}
				_, err := f.AddDatabase(config.Database{Name: "stock"})
				return err
			},
			want: strings.Replace(base, "  12=db1,db2|5433|orders|2|jobs|none|none\t# two hosts\n", "", 1) + "4=default|default|stock|0|default|none|none\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := mustParse(t, tt.in)
			if err := tt.edit(f); err != nil {
				t.Fatalf("edit: %v", err)
			}
			if got := string(f.Bytes()); got != tt.want {
				t.Errorf("file after edit\n got: %q\nwant: %q", got, tt.want)
			}
			checkReparse(t, f)
		})
	}
}

func TestMutatorsAccessors(t *testing.T) {
	t.Parallel()
	f := mustParse(t, base)
	if err := f.SetSystem("2.0"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetMaster(4); err != nil {
		t.Fatal(err)
	}
	d, err := f.AddDatabase(config.Database{Host: "", Port: "", Name: "stock", LogLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Database{ID: 13, Host: "default", Port: "default", Name: "stock", LogLevel: 1, User: "default", Notification: "none", Recipient: "none"}
	if d != want {
		t.Errorf("AddDatabase returned %+v, want %+v", d, want)
	}
	if got, ok := f.Database("localhost", "5432", "stock"); !ok || got != want {
		t.Errorf("Database(stock) = %+v, %v", got, ok)
	}
	if f.System() != "2.0" || f.Master() != 4 || len(f.Databases()) != 3 {
		t.Errorf("System %q, Master %d, %d rows", f.System(), f.Master(), len(f.Databases()))
	}
	checkReparse(t, f)
}

func TestMutatorErrors(t *testing.T) {
	t.Parallel()
	valid := config.Database{Host: "h", Port: "5432", Name: "d", User: "u"}
	with := func(change func(*config.Database)) config.Database {
		d := valid
		change(&d)
		return d
	}
	add := func(d config.Database) func(*config.File) error {
		return func(f *config.File) error { _, err := f.AddDatabase(d); return err }
	}
	update := func(id int, d config.Database) func(*config.File) error {
		return func(f *config.File) error { return f.UpdateDatabase(id, d) }
	}
	tests := []struct {
		name    string
		in      string // base when empty
		edit    func(*config.File) error
		wantErr string
		is      error
	}{
		{name: "add_duplicate_target", edit: add(config.Database{Host: "localhost", Port: "5432", Name: "sales"}),
			wantErr: "add database: localhost:5432/sales is already configured as id 3 (line 6)", is: config.ErrExists},
		{name: "add_duplicate_host_list", edit: add(config.Database{Host: "db1,db2", Port: "5433", Name: "orders"}),
			wantErr: "add database: db1,db2:5433/orders is already configured as id 12 (line 7)", is: config.ErrExists},
		{name: "add_duplicate_id", edit: add(with(func(d *config.Database) { d.ID = 3 })),
			wantErr: "add database: id 3 is already configured (line 6)", is: config.ErrExists},
		{name: "add_negative_id", edit: add(with(func(d *config.Database) { d.ID = -1 })),
			wantErr: `add database: id "-1" is out of range 1..2147483647`},
		{name: "add_id_too_large", edit: add(with(func(d *config.Database) { d.ID = config.MaxID + 1 })),
			wantErr: `add database: id "2147483648" is out of range 1..2147483647`},
		{name: "add_no_id_left", in: "2147483647=default|default|a|0|default|none\n", edit: add(valid),
			wantErr: "add database: no id left (2147483647 is taken)"},
		{name: "add_empty_name", edit: add(with(func(d *config.Database) { d.Name = "" })),
			wantErr: "add database: database is empty"},
		{name: "add_bar_in_name", edit: add(with(func(d *config.Database) { d.Name = "a|b" })),
			wantErr: `add database: database "a|b" contains "|"`},
		{name: "add_hash_in_name", edit: add(with(func(d *config.Database) { d.Name = "a#b" })),
			wantErr: `add database: database "a#b" contains "#"`},
		{name: "add_equals_in_user", edit: add(with(func(d *config.Database) { d.User = "a=b" })),
			wantErr: `add database: user "a=b" contains "="`},
		{name: "add_blank_in_host", edit: add(with(func(d *config.Database) { d.Host = "db 1" })),
			wantErr: `add database: host "db 1" contains a blank`},
		{name: "add_empty_host_entry", edit: add(with(func(d *config.Database) { d.Host = ",db" })),
			wantErr: `add database: host ",db" has an empty entry in its list`},
		{name: "add_newline_in_recipient", edit: add(with(func(d *config.Database) { d.Recipient = "a\nb" })),
			wantErr: `add database: recipient "a\nb" contains a newline`},
		{name: "add_tab_in_notification", edit: add(with(func(d *config.Database) { d.Notification = "a\tb" })),
			wantErr: `add database: notification "a\tb" contains a blank`},
		{name: "add_control_in_name", edit: add(with(func(d *config.Database) { d.Name = "a\x00" })),
			wantErr: `add database: database "a\x00" contains a control character`},
		{name: "add_port_out_of_range", edit: add(with(func(d *config.Database) { d.Port = "70000" })),
			wantErr: `add database: port "70000" is out of range 1..65535`},
		{name: "add_port_not_number", edit: add(with(func(d *config.Database) { d.Port = "pg" })),
			wantErr: `add database: port "pg" is neither a number nor default`},
		{name: "add_loglevel_out_of_range", edit: add(with(func(d *config.Database) { d.LogLevel = 6 })),
			wantErr: `add database: loglevel "6" is out of range 0..5`},
		{name: "update_missing_id", edit: update(9, valid),
			wantErr: "update database id 9: not configured", is: config.ErrNotConfigured},
		{name: "update_to_other_target", edit: update(3, config.Database{Host: "db1,db2", Port: "5433", Name: "orders"}),
			wantErr: "update database id 3: db1,db2:5433/orders is already configured as id 12 (line 7)", is: config.ErrExists},
		{name: "update_change_id", edit: update(3, with(func(d *config.Database) { d.ID = 4 })),
			wantErr: "update database id 3: cannot change the id to 4"},
		{name: "update_bad_value", edit: update(3, with(func(d *config.Database) { d.User = "a b" })),
			wantErr: `update database id 3: user "a b" contains a blank`},
		{name: "update_loglevel_negative", edit: update(3, with(func(d *config.Database) { d.LogLevel = -1 })),
			wantErr: `update database id 3: loglevel "-1" is out of range 0..5`},
		{name: "remove_missing_id", edit: func(f *config.File) error { return f.RemoveDatabase(9) },
			wantErr: "remove database id 9: not configured", is: config.ErrNotConfigured},
		{name: "set_system_not_a_version", edit: func(f *config.File) error { return f.SetSystem("1.x") },
			wantErr: `set system: system version "1.x" is not numbers separated by dots (e.g. 0.00)`},
		{name: "set_system_blank", edit: func(f *config.File) error { return f.SetSystem("1 2") },
			wantErr: `set system: system version "1 2" contains a blank`},
		{name: "set_system_comment", edit: func(f *config.File) error { return f.SetSystem("1#2") },
			wantErr: `set system: system version "1#2" contains "#"`},
		{name: "set_system_empty", edit: func(f *config.File) error { return f.SetSystem("") },
			wantErr: `set system: system version is empty`},
		{name: "set_master_too_high", edit: func(f *config.File) error { return f.SetMaster(6) },
			wantErr: `set master: master loglevel "6" is out of range 0..5`},
		{name: "set_master_negative", edit: func(f *config.File) error { return f.SetMaster(-1) },
			wantErr: `set master: master loglevel "-1" is out of range 0..5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			if in == "" {
				in = base
			}
			f := mustParse(t, in)
			err := tt.edit(f)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error\n got: %v\nwant: %s", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if got := string(f.Bytes()); got != in {
				t.Errorf("a failed edit changed the file:\n%q", got)
			}
		})
	}
}

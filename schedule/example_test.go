package schedule_test

import (
	"fmt"
	"time"

	"github.com/pgjobs/pgjobs/schedule"
)

func ExampleParse() {
	s, err := schedule.Parse("d 12.1 17:30")
	fmt.Println(s, err)
	_, err = schedule.Parse("D 25:00")
	fmt.Println(err)
	// Output:
	// D 12.01 17:30 <nil>
	// 1:3: hour 25 is out of range 0..23
}

func ExampleSchedule_Next() {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	lastDay := schedule.MustParse("D -1 17:30").In(berlin)
	t := time.Date(2026, 1, 31, 18, 0, 0, 0, berlin)
	for range 3 {
		t, _ = lastDay.Next(t)
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-02-28T17:30:00+01:00
	// 2026-03-31T17:30:00+02:00
	// 2026-04-30T17:30:00+02:00
}

func ExampleSchedule_Next_interval() {
	start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	every5 := schedule.MustParse("I 0:05").In(time.UTC).AnchoredAt(start)
	next, _ := every5.Next(start.Add(7 * time.Minute))
	fmt.Println(next.Format(time.RFC3339))
	// Output: 2026-11-20T10:10:00Z
}

package scheduler

import (
	"errors"
	"testing"
	"time"
)

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// at builds a Berlin wall time; offset disambiguates the fall-back repeat
// ("+02:00" or "+01:00").
func at(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04 -07:00", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runs returns the first n run times after from.
func runs(s *Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	t := from
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func TestNextAcrossDST(t *testing.T) {
	loc := berlin(t)
	tests := []struct {
		name string
		spec Spec
		from string
		want []string
	}{
		{"daily in the spring-forward gap runs shifted once",
			Spec{Kind: Daily, Time: "02:30"}, "2026-03-28 03:00 +01:00",
			[]string{"2026-03-29 03:30 +02:00", "2026-03-30 02:30 +02:00"}},
		{"daily in the fall-back repeat runs once at the first occurrence",
			Spec{Kind: Daily, Time: "02:30"}, "2026-10-24 03:00 +02:00",
			[]string{"2026-10-25 02:30 +02:00", "2026-10-26 02:30 +01:00"}},
		{"daily 09:00 keeps its wall time across the change",
			Spec{Kind: Daily, Time: "09:00"}, "2026-03-28 10:00 +01:00",
			[]string{"2026-03-29 09:00 +02:00", "2026-03-30 09:00 +02:00"}},
		{"after the first occurrence of a repeated time the next is tomorrow",
			Spec{Kind: Daily, Time: "02:30"}, "2026-10-25 02:30 +02:00",
			[]string{"2026-10-26 02:30 +01:00"}},
		{"weekly on two days",
			Spec{Kind: Weekly, Time: "18:30", Weekdays: []string{"thursday", "Mon"}}, "2026-03-26 19:00 +01:00",
			[]string{"2026-03-30 18:30 +02:00", "2026-04-02 18:30 +02:00", "2026-04-06 18:30 +02:00"}},
		{"monthly on the 31st falls back to the last day",
			Spec{Kind: Monthly, Time: "08:00", Day: 31}, "2026-01-31 09:00 +01:00",
			[]string{"2026-02-28 08:00 +01:00", "2026-03-31 08:00 +02:00", "2026-04-30 08:00 +02:00"}},
		{"interval with a window starts at the window and stops at its end",
			Spec{Kind: Interval, Every: Duration(5 * time.Hour), WindowStart: "08:00", WindowEnd: "20:00"}, "2026-03-28 19:00 +01:00",
			[]string{"2026-03-29 08:00 +02:00", "2026-03-29 13:00 +02:00", "2026-03-29 18:00 +02:00", "2026-03-30 08:00 +02:00"}},
		{"interval window crossing midnight",
			Spec{Kind: Interval, Every: Duration(2 * time.Hour), WindowStart: "22:00", WindowEnd: "02:00"}, "2026-05-01 12:00 +02:00",
			[]string{"2026-05-01 22:00 +02:00", "2026-05-02 00:00 +02:00", "2026-05-02 02:00 +02:00", "2026-05-02 22:00 +02:00"}},
		{"interval steps by elapsed time across the gap",
			Spec{Kind: Interval, Every: Duration(time.Hour), Start: at(t, "2026-03-29 00:30 +01:00")}, "2026-03-29 00:00 +01:00",
			[]string{"2026-03-29 00:30 +01:00", "2026-03-29 01:30 +01:00", "2026-03-29 03:30 +02:00", "2026-03-29 04:30 +02:00"}},
		{"hourly cron on the fall-back day does not repeat the hour",
			Spec{Kind: Cron, Cron: "0 * * * *"}, "2026-10-25 00:30 +02:00",
			[]string{"2026-10-25 01:00 +02:00", "2026-10-25 02:00 +02:00", "2026-10-25 03:00 +01:00", "2026-10-25 04:00 +01:00"}},
		{"cron in the gap merges with the real times after it",
			Spec{Kind: Cron, Cron: "*/30 2,3 * * *"}, "2026-03-29 00:00 +01:00",
			[]string{"2026-03-29 03:00 +02:00", "2026-03-29 03:30 +02:00", "2026-03-30 02:00 +02:00"}},
		{"cron weekdays at 09:00",
			Spec{Kind: Cron, Cron: "0 9 * * 1-5"}, "2026-03-27 10:00 +01:00",
			[]string{"2026-03-30 09:00 +02:00", "2026-03-31 09:00 +02:00"}},
		{"cron descriptor",
			Spec{Kind: Cron, Cron: "@monthly"}, "2026-03-15 10:00 +01:00",
			[]string{"2026-04-01 00:00 +02:00", "2026-05-01 00:00 +02:00"}},
		{"cron @every becomes an interval",
			Spec{Kind: Cron, Cron: "@every 90m", Start: at(t, "2026-03-15 10:00 +01:00")}, "2026-03-15 10:00 +01:00",
			[]string{"2026-03-15 11:30 +01:00", "2026-03-15 13:00 +01:00"}},
		{"cron on the 29th of February",
			Spec{Kind: Cron, Cron: "0 12 29 2 *"}, "2026-03-01 00:00 +01:00",
			[]string{"2028-02-29 12:00 +01:00", "2032-02-29 12:00 +01:00"}},
		{"once",
			Spec{Kind: Once, At: at(t, "2026-04-01 09:00 +02:00")}, "2026-03-01 00:00 +01:00",
			[]string{"2026-04-01 09:00 +02:00"}},
		{"start delays a daily schedule",
			Spec{Kind: Daily, Time: "09:00", Start: at(t, "2026-04-10 12:00 +02:00")}, "2026-03-01 00:00 +01:00",
			[]string{"2026-04-11 09:00 +02:00"}},
		{"own zone",
			Spec{Kind: Daily, Time: "09:00", Zone: "America/New_York"}, "2026-03-01 00:00 +01:00",
			[]string{"2026-03-01 09:00 -05:00", "2026-03-02 09:00 -05:00"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(tc.spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			got := runs(s, at(t, tc.from), len(tc.want))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d runs %v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				if !got[i].Equal(at(t, w)) {
					t.Errorf("run %d = %s, want %s", i, got[i].In(loc).Format("2006-01-02 15:04 -07:00"), w)
				}
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want error
	}{
		{"no kind", Spec{}, ErrInvalidSpec},
		{"unknown kind", Spec{Kind: "hourly"}, ErrInvalidSpec},
		{"once without time", Spec{Kind: Once}, ErrInvalidSpec},
		{"bad time of day", Spec{Kind: Daily, Time: "25:00"}, ErrInvalidSpec},
		{"time without minutes", Spec{Kind: Daily, Time: "9"}, ErrInvalidSpec},
		{"weekly without days", Spec{Kind: Weekly, Time: "09:00"}, ErrInvalidSpec},
		{"unknown weekday", Spec{Kind: Weekly, Time: "09:00", Weekdays: []string{"moonday"}}, ErrInvalidSpec},
		{"monthly day 0", Spec{Kind: Monthly, Time: "09:00"}, ErrInvalidSpec},
		{"monthly day 32", Spec{Kind: Monthly, Time: "09:00", Day: 32}, ErrInvalidSpec},
		{"zero interval", Spec{Kind: Interval}, ErrInvalidSpec},
		{"negative interval", Spec{Kind: Interval, Every: Duration(-time.Hour)}, ErrInvalidSpec},
		{"interval below the minimum", Spec{Kind: Interval, Every: Duration(time.Second)}, ErrInvalidSpec},
		{"half a window", Spec{Kind: Interval, Every: Duration(time.Hour), WindowStart: "08:00"}, ErrInvalidSpec},
		{"empty window", Spec{Kind: Interval, Every: Duration(time.Hour), WindowStart: "08:00", WindowEnd: "08:00"}, ErrInvalidSpec},
		{"invalid cron", Spec{Kind: Cron, Cron: "61 * * * *"}, ErrInvalidSpec},
		{"cron with too few fields", Spec{Kind: Cron, Cron: "0 9 *"}, ErrInvalidSpec},
		{"cron that never fires", Spec{Kind: Cron, Cron: "0 0 30 2 *"}, ErrInvalidSpec},
		{"cron with its own zone", Spec{Kind: Cron, Cron: "CRON_TZ=UTC 0 9 * * *"}, ErrInvalidSpec},
		{"field that does not apply", Spec{Kind: Daily, Time: "09:00", Cron: "0 9 * * *"}, ErrInvalidSpec},
		{"unknown zone", Spec{Kind: Daily, Time: "09:00", Zone: "Mars/Olympus_Mons"}, ErrUnknownZone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.spec, time.UTC)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseWhen(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 2026-03-30 23:30 in Tokyo is 2026-03-30 10:30 in New York.
	now := time.Date(2026, 3, 30, 14, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		loc  *time.Location
		want time.Time
	}{
		{"tomorrow in Tokyo", "tomorrow 9:00", tokyo, time.Date(2026, 3, 31, 9, 0, 0, 0, tokyo)},
		{"tomorrow in New York", "Tomorrow at 09:00", ny, time.Date(2026, 3, 31, 9, 0, 0, 0, ny)},
		{"today", "today 18:00", ny, time.Date(2026, 3, 30, 18, 0, 0, 0, ny)},
		{"bare time still today", "23:45", tokyo, time.Date(2026, 3, 30, 23, 45, 0, 0, tokyo)},
		{"bare time passed today is tomorrow", "08:00", tokyo, time.Date(2026, 3, 31, 8, 0, 0, 0, tokyo)},
		{"naive date time", "2026-04-02 07:15", ny, time.Date(2026, 4, 2, 7, 15, 0, 0, ny)},
		{"naive ISO with seconds", "2026-04-02T07:15:30", ny, time.Date(2026, 4, 2, 7, 15, 30, 0, ny)},
		{"offset", "2026-04-02T07:15:00+02:00", ny, time.Date(2026, 4, 2, 5, 15, 0, 0, time.UTC)},
		{"UTC", "2026-04-02T07:15Z", ny, time.Date(2026, 4, 2, 7, 15, 0, 0, time.UTC)},
		{"naive time in the gap is shifted", "2026-03-29 02:30", berlin(t), time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseWhen(tc.in, now, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("ParseWhen(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "soon", "2026-04-02", "tomorrow", "31/12/2026 10:00", "25:61"} {
		if _, err := ParseWhen(bad, now, ny); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("ParseWhen(%q) err = %v, want ErrInvalidSpec", bad, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"90m": 90 * time.Minute, "2d": 48 * time.Hour, "1w2d3h": 9*24*time.Hour + 3*time.Hour, "1h30m": 90 * time.Minute} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "x2d", "3 hours"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
}

func TestDescribe(t *testing.T) {
	loc := berlin(t)
	tests := map[string]Spec{
		"daily at 09:00":                      {Kind: Daily, Time: "9:00"},
		"weekly on mon, thu at 18:30":         {Kind: Weekly, Time: "18:30", Weekdays: []string{"thu", "monday"}},
		"every 2h between 08:00 and 20:00":    {Kind: Interval, Every: Duration(2 * time.Hour), WindowStart: "08:00", WindowEnd: "20:00"},
		"every 1h30m":                         {Kind: Interval, Every: Duration(90 * time.Minute)},
		"every 1d":                            {Kind: Interval, Every: Duration(24 * time.Hour)},
		`cron "0 9 * * 1-5"`:                  {Kind: Cron, Cron: "0 9 * * 1-5"},
		"daily at 09:00 (America/New_York)":   {Kind: Daily, Time: "09:00", Zone: "America/New_York"},
		"once at Mon 2026-03-30 09:00 CEST":   {Kind: Once, At: time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC)},
		"monthly on day 5 at 07:00":           {Kind: Monthly, Day: 5, Time: "07:00"},
		"every 45m between 22:00 and 02:00":   {Kind: Interval, Every: Duration(45 * time.Minute), WindowStart: "22:00", WindowEnd: "2:00"},
		"monthly on day 31 at 07:00 (the las": {Kind: Monthly, Day: 31, Time: "07:00"},
	}
	for want, spec := range tests {
		s, err := Compile(spec, loc)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Describe(); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("Describe(%+v) = %q, want %q", spec, got, want)
		}
	}
}

// TestNextMatchesBruteForce checks the optimised walk of nextCalendar
// against a brute force over every candidate wall time (wallTime's rules),
// around the DST changes of zones with one-hour, half-hour and no shifts.
func TestNextMatchesBruteForce(t *testing.T) {
	exprs := []string{"* * * * *", "*/7 1-4 * * *", "30 2 * * *", "0,59 0-3 * * 0", "15 */2 * * *", "0 0 * * *"}
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range exprs {
			s, err := Compile(Spec{Kind: Cron, Cron: expr}, loc)
			if err != nil {
				t.Fatal(err)
			}
			// Every change of 2026 in the zone, and a plain day.
			var days []time.Time
			for d := time.Date(2026, 1, 1, 0, 0, 0, 0, loc); d.Year() == 2026; d = d.AddDate(0, 0, 1) {
				if o1, o2 := dayOffsets(d.Year(), d.Month(), d.Day(), loc); o1 != o2 {
					days = append(days, d)
				}
			}
			days = append(days, time.Date(2026, 6, 10, 0, 0, 0, 0, loc))
			for _, day := range days {
				var cands []time.Time
				for i := -2; i <= 2; i++ {
					y, m, d := day.AddDate(0, 0, i).Date()
					if !s.dayMatches(y, m, d, time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()) {
						continue
					}
					s.eachClock(clock{}, func(c clock) bool {
						cands = append(cands, wallTime(y, m, d, c, loc))
						return true
					})
				}
				for after := day.Add(-3 * time.Hour); after.Before(day.Add(30 * time.Hour)); after = after.Add(7*time.Minute + 13*time.Second) {
					var want time.Time
					for _, c := range cands {
						if c.After(after) && (want.IsZero() || c.Before(want)) {
							want = c
						}
					}
					if want.IsZero() {
						continue // beyond the candidates collected
					}
					if got := s.Next(after); !got.Equal(want) {
						t.Fatalf("%s %q: Next(%s) = %s, want %s", zone, expr, after.In(loc), got.In(loc), want.In(loc))
					}
				}
			}
		}
	}
}

// Compile validates spec and binds it to loc (used when spec.Zone is
// empty; nil means UTC). A Cron spec with "@every" becomes an Interval.
// It does not check whether a Once time has passed (see Validate).
func Compile(spec Spec, loc *time.Location) (*Schedule, error) {
	return compile(spec, loc, MinInterval)
}

package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kind is the kind of a schedule.
type Kind string

// Schedule kinds.
const (
	// Once runs one time, at Spec.At.
	Once Kind = "once"
	// Daily runs every day at Spec.Time (local wall time).
	Daily Kind = "daily"
	// Weekly runs on Spec.Weekdays at Spec.Time.
	Weekly Kind = "weekly"
	// Monthly runs on day Spec.Day of every month at Spec.Time; in months
	// without that day (the 31st in April) it runs on the last day.
	Monthly Kind = "monthly"
	// Interval runs every Spec.Every of elapsed time, optionally only inside
	// a daily window of wall time.
	Interval Kind = "interval"
	// Cron runs on a five-field cron expression (or a descriptor such as
	// @daily) evaluated in wall time.
	Cron Kind = "cron"
)

// EnumValues lists the kinds (tool.Enumerator).
func (Kind) EnumValues() []string {
	return []string{string(Once), string(Daily), string(Weekly), string(Monthly), string(Interval), string(Cron)}
}

// MinInterval is the shortest interval a task may have. Extension jobs may
// run as often as every second.
const MinInterval = time.Minute

// minJobInterval is the shortest interval of an extension job.
const minJobInterval = time.Second

// searchDays bounds how far ahead the next run of a calendar schedule is
// looked for: enough for "29 February" across a skipped leap year.
const searchDays = 9 * 366

// Errors of schedule validation. They are wrapped with the detail.
var (
	// ErrInvalidSpec: the schedule is malformed (bad time of day, unknown
	// weekday, invalid cron expression, zero interval …).
	ErrInvalidSpec = errors.New("invalid schedule")
	// ErrPast: a one-time schedule names a time that has passed.
	ErrPast = errors.New("time is in the past")
	// ErrUnknownZone: Spec.Zone is not an IANA time zone name.
	ErrUnknownZone = errors.New("unknown time zone")
)

// Spec describes when a task runs. Which fields apply depends on Kind; the
// others must be empty. Times of day are "HH:MM" in the schedule's zone
// (Zone, else the configured zone).
//
// # Wall time and DST
//
// Daily, weekly, monthly, cron and interval windows are wall-clock
// schedules, evaluated in the zone every time:
//
//   - A wall time that does not exist (the spring-forward gap, 02:30 in
//     Europe/Berlin on the last Sunday of March) runs shifted forward by the
//     length of the gap (03:30), once.
//   - A wall time that occurs twice (the fall-back repeat, 02:30 on the last
//     Sunday of October) runs once, at its first occurrence. This holds for
//     cron too: an hourly cron job does not run again in the repeated hour.
//   - Interval schedules step by elapsed time (every 2h is 2h apart also
//     across a change); only their window edges are wall times.
type Spec struct {
	Kind Kind `json:"kind"`
	// At is the instant of a Once schedule.
	At time.Time `json:"at,omitzero"`
	// Time is the wall time of day ("09:00") of Daily, Weekly and Monthly.
	Time string `json:"time,omitempty"`
	// Weekdays of a Weekly schedule: "mon" … "sun" (full English names
	// are accepted and normalised).
	Weekdays []string `json:"weekdays,omitempty"`
	// Day of month (1–31) of a Monthly schedule.
	Day int `json:"day,omitempty"`
	// Every is the period of an Interval schedule.
	Every Duration `json:"every,omitempty"`
	// WindowStart and WindowEnd restrict an Interval schedule to a daily
	// window of wall time, both inclusive ("08:00"–"20:00"; a window may
	// cross midnight, "22:00"–"06:00"). Runs then start at WindowStart and
	// repeat every Every while not after WindowEnd.
	WindowStart string `json:"window_start,omitempty"`
	WindowEnd   string `json:"window_end,omitempty"`
	// Cron is a five-field cron expression or a descriptor (@hourly, @daily,
	// @weekly, @monthly, @yearly; "@every 90m" becomes an Interval).
	Cron string `json:"cron,omitempty"`
	// Start is optional: no run before it. For an Interval without a
	// window it is also the anchor of the runs (the first run); a task
	// added without one is anchored at its creation.
	Start time.Time `json:"start,omitzero"`
	// Zone overrides the configured time zone for this schedule (an IANA
	// name such as "America/New_York").
	Zone string `json:"zone,omitempty"`
}

// Duration is a time.Duration that reads and writes as text ("90m").
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string (with "d" for days allowed) or
// a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("duration: want a string such as \"90m\"")
		}
		*d = Duration(n)
		return nil
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a Go duration ("1h30m") that may also use "d" for
// days and "w" for weeks ("2d", "1w2d3h").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: empty duration", ErrInvalidSpec)
	}
	var total time.Duration
	rest := s
	for _, u := range []struct {
		suffix byte
		unit   time.Duration
	}{{'w', 7 * 24 * time.Hour}, {'d', 24 * time.Hour}} {
		if i := strings.IndexByte(rest, u.suffix); i > 0 {
			n, err := strconv.Atoi(rest[:i])
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%w: bad duration %q", ErrInvalidSpec, s)
			}
			total += time.Duration(n) * u.unit
			rest = rest[i+1:]
		}
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("%w: bad duration %q (use e.g. 90m, 2h, 1d)", ErrInvalidSpec, s)
		}
		total += d
	}
	return total, nil
}

// clock is a wall time of day.
type clock struct{ hour, min int }

func (c clock) String() string { return fmt.Sprintf("%02d:%02d", c.hour, c.min) }

func (c clock) minutes() int { return c.hour*60 + c.min }

// parseClock reads "HH:MM" (or "H:MM").
func parseClock(field, s string) (clock, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || len(h) == 0 || len(h) > 2 || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return clock{}, fmt.Errorf("%w: %s %q is not a time of day (want HH:MM, 00:00–23:59)", ErrInvalidSpec, field, s)
	}
	return clock{hh, mm}, nil
}

var weekdayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

var weekdayShort = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// WeekdayValues are the weekday names of Spec.Weekdays.
var WeekdayValues = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// Schedule is a validated Spec bound to its time zone: it computes run
// times. It is immutable and safe for concurrent use.
type Schedule struct {
	spec  Spec
	loc   *time.Location
	at    clock
	days  uint8 // weekly: bit per time.Weekday
	win   bool
	ws    clock
	we    clock
	every time.Duration
	cron  *cron.SpecSchedule
}

func compile(spec Spec, loc *time.Location, minEvery time.Duration) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	if spec.Zone != "" {
		z, err := time.LoadLocation(spec.Zone)
		if err != nil || spec.Zone == "Local" {
			return nil, fmt.Errorf("%w %q (use an IANA name such as \"Europe/Berlin\")", ErrUnknownZone, spec.Zone)
		}
		loc = z
	}
	s := &Schedule{spec: spec, loc: loc}
	bad := func(format string, args ...any) (*Schedule, error) {
		return nil, fmt.Errorf("%w: %s schedule: %s", ErrInvalidSpec, spec.Kind, fmt.Sprintf(format, args...))
	}
	unexpected := func(allowed ...string) error {
		set := map[string]bool{
			"at": !spec.At.IsZero(), "time": spec.Time != "", "weekdays": len(spec.Weekdays) > 0,
			"day": spec.Day != 0, "every": spec.Every != 0, "window_start": spec.WindowStart != "",
			"window_end": spec.WindowEnd != "", "cron": spec.Cron != "",
		}
		for _, k := range []string{"at", "time", "weekdays", "day", "every", "window_start", "window_end", "cron"} {
			if set[k] && !slices.Contains(allowed, k) {
				return fmt.Errorf("%w: %s schedule: field %q does not apply", ErrInvalidSpec, spec.Kind, k)
			}
		}
		return nil
	}
	var err error
	switch spec.Kind {
	case Once:
		if err := unexpected("at"); err != nil {
			return nil, err
		}
		if spec.At.IsZero() {
			return bad("no time given")
		}
		s.spec.At = spec.At.UTC()
	case Daily, Weekly, Monthly:
		if err := unexpected("time", "weekdays", "day"); err != nil {
			return nil, err
		}
		if s.at, err = parseClock("time", spec.Time); err != nil {
			return nil, err
		}
		s.spec.Time = s.at.String()
		switch spec.Kind {
		case Daily:
			if len(spec.Weekdays) > 0 || spec.Day != 0 {
				return bad("only a time applies (use weekly for weekdays, monthly for a day)")
			}
		case Weekly:
			if spec.Day != 0 {
				return bad("day does not apply (use monthly)")
			}
			if len(spec.Weekdays) == 0 {
				return bad("no weekdays given (want e.g. [\"mon\",\"thu\"])")
			}
			for _, w := range spec.Weekdays {
				d, ok := weekdayNames[strings.ToLower(strings.TrimSpace(w))]
				if !ok {
					return bad("unknown weekday %q (want mon, tue, wed, thu, fri, sat or sun)", w)
				}
				s.days |= 1 << d
			}
			s.spec.Weekdays = nil
			for _, d := range []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday} {
				if s.days&(1<<d) != 0 {
					s.spec.Weekdays = append(s.spec.Weekdays, weekdayShort[d])
				}
			}
		case Monthly:
			if len(spec.Weekdays) > 0 {
				return bad("weekdays do not apply (use weekly)")
			}
			if spec.Day < 1 || spec.Day > 31 {
				return bad("day %d is not a day of the month (want 1–31)", spec.Day)
			}
		}
	case Interval:
		if err := unexpected("every", "window_start", "window_end"); err != nil {
			return nil, err
		}
		s.every = time.Duration(spec.Every)
		if s.every <= 0 {
			return bad("the interval must be positive (e.g. \"every\": \"2h\")")
		}
		if s.every < minEvery {
			return bad("the interval %s is shorter than the minimum %s", s.every, minEvery)
		}
		if (spec.WindowStart == "") != (spec.WindowEnd == "") {
			return bad("give both window_start and window_end, or neither")
		}
		if spec.WindowStart != "" {
			if s.ws, err = parseClock("window_start", spec.WindowStart); err != nil {
				return nil, err
			}
			if s.we, err = parseClock("window_end", spec.WindowEnd); err != nil {
				return nil, err
			}
			if s.ws == s.we {
				return bad("the window %s–%s is empty", s.ws, s.we)
			}
			s.win = true
			s.spec.WindowStart, s.spec.WindowEnd = s.ws.String(), s.we.String()
		}
	case Cron:
		if err := unexpected("cron"); err != nil {
			return nil, err
		}
		expr := strings.TrimSpace(spec.Cron)
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return bad("%q: give the zone in the zone field, not in the expression", expr)
		}
		if rest, ok := strings.CutPrefix(expr, "@every "); ok {
			d, err := ParseDuration(rest)
			if err != nil {
				return nil, err
			}
			return compile(Spec{Kind: Interval, Every: Duration(d), Start: spec.Start, Zone: spec.Zone}, loc, minEvery)
		}
		sched, err := cron.ParseStandard(expr)
		if err != nil {
			return bad("%q: %v", expr, err)
		}
		cs, ok := sched.(*cron.SpecSchedule)
		if !ok {
			return bad("%q is not supported", expr)
		}
		s.cron = cs
		s.spec.Cron = expr
	case "":
		return nil, fmt.Errorf("%w: no kind given (want once, daily, weekly, monthly, interval or cron)", ErrInvalidSpec)
	default:
		return nil, fmt.Errorf("%w: unknown kind %q (want once, daily, weekly, monthly, interval or cron)", ErrInvalidSpec, spec.Kind)
	}
	if !s.spec.Start.IsZero() {
		s.spec.Start = s.spec.Start.UTC()
	}
	if spec.Kind == Cron && s.Next(time.Now().AddDate(-1, 0, 0)).IsZero() {
		return bad("%q never fires", spec.Cron)
	}
	return s, nil
}

// Spec returns the normalised spec (weekdays sorted and short, times as
// HH:MM, instants in UTC).
func (s *Schedule) Spec() Spec { return s.spec }

// Location is the zone the schedule is evaluated in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first run time strictly after after, or the zero time
// when there is none (a Once schedule that has run).
func (s *Schedule) Next(after time.Time) time.Time {
	if st := s.spec.Start; !st.IsZero() && after.Before(st) {
		// No run before Start: search from just before it.
		after = st.Add(-time.Nanosecond)
	}
	switch s.spec.Kind {
	case Once:
		if s.spec.At.After(after) {
			return s.spec.At
		}
		return time.Time{}
	case Interval:
		if s.win {
			return s.nextWindowed(after)
		}
		anchor := s.spec.Start
		if anchor.IsZero() || !after.Before(anchor) {
			if anchor.IsZero() {
				anchor = time.Unix(0, 0)
			}
			k := after.Sub(anchor)/s.every + 1
			return anchor.Add(k * s.every)
		}
		return anchor
	default:
		return s.nextCalendar(after)
	}
}

// nextWindowed: runs at window start + k·every while not after window end.
func (s *Schedule) nextWindowed(after time.Time) time.Time {
	la := after.In(s.loc)
	y, m, d := la.Date()
	for i := -1; i <= 2; i++ {
		start := wallTime(y, m, d+i, s.ws, s.loc)
		endDay := d + i
		if s.we.minutes() < s.ws.minutes() {
			endDay++ // the window crosses midnight
		}
		end := wallTime(y, m, endDay, s.we, s.loc)
		if end.Before(start) {
			continue
		}
		if after.Before(start) {
			return start
		}
		k := after.Sub(start)/s.every + 1
		if t := start.Add(k * s.every); !t.After(end) {
			return t
		}
	}
	return time.Time{} // unreachable: a window opens every day
}

// nextCalendar finds the first matching wall time after after, day by day.
func (s *Schedule) nextCalendar(after time.Time) time.Time {
	la := after.In(s.loc)
	y, m, d := la.Date()
	ah, am := la.Hour(), la.Minute()
	// A gap shift can move a candidate of the previous day past midnight,
	// so the search starts one day early.
	for i := -1; i < searchDays; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC)
		dy, dm, dd := day.Date()
		if s.cron != nil && s.cron.Month&(1<<uint(dm)) == 0 {
			// Skip to the first of the next month.
			next := time.Date(dy, dm+1, 1, 12, 0, 0, 0, time.UTC)
			i += int(next.Sub(day).Hours()/24) - 1
			continue
		}
		if !s.dayMatches(dy, dm, dd, day.Weekday()) {
			continue
		}
		// On a day without an offset change wall order is instant order,
		// so the first candidate after after is the answer. On a change
		// day the earliest candidate is taken; a wall time u (as if UTC)
		// lies at an instant between u−hi and u−lo (the day's offsets), so
		// candidates that cannot be after after are skipped, and the walk
		// stops once none can be earlier than the best.
		o1, o2 := dayOffsets(dy, dm, dd, s.loc)
		plain := o1 == o2
		if i == -1 && plain {
			continue // without a gap nothing of the day before is after after
		}
		from := clock{}
		if i == 0 && plain {
			// Wall times up to after's minute are not after after.
			from = clock{ah, am + 1}
		}
		lo, hi := int64(min(o1, o2)), int64(max(o1, o2))
		base := time.Date(dy, dm, dd, 0, 0, 0, 0, time.UTC).Unix()
		afterSec := after.Unix()
		var best time.Time
		s.eachClock(from, func(c clock) bool {
			if !plain {
				u := base + int64(c.hour*3600+c.min*60)
				if u-lo <= afterSec {
					return true
				}
				if !best.IsZero() && u-hi > best.Unix() {
					return false
				}
			}
			t := wallTime(dy, dm, dd, c, s.loc)
			if !t.After(after) {
				return true
			}
			if best.IsZero() || t.Before(best) {
				best = t
			}
			return !plain
		})
		if !best.IsZero() {
			return best
		}
	}
	return time.Time{}
}

func (s *Schedule) dayMatches(y int, m time.Month, d int, wd time.Weekday) bool {
	switch {
	case s.cron != nil:
		c := s.cron
		const starBit = 1 << 63
		domMatch := c.Dom&(1<<uint(d)) != 0
		dowMatch := c.Dow&(1<<uint(wd)) != 0
		if c.Dom&starBit != 0 || c.Dow&starBit != 0 {
			return domMatch && dowMatch
		}
		return domMatch || dowMatch
	case s.spec.Kind == Weekly:
		return s.days&(1<<wd) != 0
	case s.spec.Kind == Monthly:
		return d == min(s.spec.Day, daysIn(y, m))
	default:
		return true
	}
}

// eachClock calls fn with the day's wall times from from on, in order,
// until it returns false.
func (s *Schedule) eachClock(from clock, fn func(clock) bool) {
	if s.cron == nil {
		if s.at.minutes() >= from.minutes() {
			fn(s.at)
		}
		return
	}
	for h := from.hour; h < 24; h++ {
		if s.cron.Hour&(1<<uint(h)) == 0 {
			continue
		}
		m0 := 0
		if h == from.hour {
			m0 = from.min
		}
		for mi := m0; mi < 60; mi++ {
			if s.cron.Minute&(1<<uint(mi)) == 0 {
				continue
			}
			if !fn(clock{h, mi}) {
				return
			}
		}
	}
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day()
}

// dayOffsets returns loc's UTC offsets (seconds) around the local day
// y-m-d: at its start and at its end (with some margin on both sides).
func dayOffsets(y int, m time.Month, d int, loc *time.Location) (int, int) {
	u := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	_, o1 := u.Add(-14 * time.Hour).In(loc).Zone()
	_, o2 := u.Add(38 * time.Hour).In(loc).Zone()
	return o1, o2
}

// wallTime returns the instant of wall time c on day y-m-d in loc (d may
// overflow the month; it is normalised). A wall time in a spring-forward
// gap is shifted forward by the gap's length; a wall time that occurs
// twice (fall-back) is its first occurrence.
func wallTime(y int, m time.Month, d int, c clock, loc *time.Location) time.Time {
	u := time.Date(y, m, d, c.hour, c.min, 0, 0, time.UTC)
	_, before := u.Add(-24 * time.Hour).In(loc).Zone()
	_, after := u.Add(24 * time.Hour).In(loc).Zone()
	c1 := u.Add(-time.Duration(before) * time.Second)
	if before == after {
		return c1
	}
	c2 := u.Add(-time.Duration(after) * time.Second)
	v1, v2 := sameWall(c1, u, loc), sameWall(c2, u, loc)
	switch {
	case v1 && v2:
		if c2.Before(c1) {
			return c2
		}
		return c1
	case v2:
		return c2
	default:
		// c1 valid, or a gap: the offset before the change shifts the
		// time forward by the gap.
		return c1
	}
}

func sameWall(t, u time.Time, loc *time.Location) bool {
	l := t.In(loc)
	return l.Hour() == u.Hour() && l.Minute() == u.Minute() && l.Day() == u.Day()
}

// Describe is a short human description: "daily at 09:00",
// "weekly on mon, thu at 18:30", "every 2h between 08:00 and 20:00".
func (s *Schedule) Describe() string {
	sp := s.spec
	zone := ""
	if sp.Zone != "" {
		zone = " (" + sp.Zone + ")"
	}
	switch sp.Kind {
	case Once:
		return "once at " + FormatTime(sp.At, s.loc)
	case Daily:
		return "daily at " + sp.Time + zone
	case Weekly:
		return "weekly on " + strings.Join(sp.Weekdays, ", ") + " at " + sp.Time + zone
	case Monthly:
		d := fmt.Sprintf("monthly on day %d at %s%s", sp.Day, sp.Time, zone)
		if sp.Day > 28 {
			d += " (the last day in shorter months)"
		}
		return d
	case Interval:
		d := "every " + shortDuration(s.every)
		if s.win {
			d += " between " + sp.WindowStart + " and " + sp.WindowEnd + zone
		}
		return d
	case Cron:
		return "cron " + strconvQuote(sp.Cron) + zone
	}
	return string(sp.Kind)
}

func strconvQuote(s string) string { return "\"" + s + "\"" }

// shortDuration prints 2h instead of 2h0m0s.
func shortDuration(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatTime formats t for people in loc: "Mon 2026-03-30 09:00 CEST".
func FormatTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "—"
	}
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2006-01-02 15:04 MST")
}

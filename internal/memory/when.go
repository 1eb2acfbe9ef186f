package memory

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// period is a span of time a query names, [from, to) in unix nanoseconds;
// the zero period names none.
type period struct{ from, to int64 }

func (p period) named() bool { return p.to > p.from }

// contains reports whether t falls in the period widened by before and
// after.
func (p period) contains(t int64, before, after time.Duration) bool {
	return t >= p.from-int64(before) && t < p.to+int64(after)
}

const monthRe = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`

var (
	dayMonthYear = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRe + `,?\s*(\d{4})\b`)
	})
	monthDayYear = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b` + monthRe + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s*(\d{4})\b`)
	})
	monthYear = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b` + monthRe + `,?\s+(?:of\s+)?(\d{4})\b`) })
	isoDate   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`) })
	yearOnly  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(19\d\d|20\d\d)\b`) })
)

func monthOf(s string) time.Month {
	s = strings.ToLower(s)
	for m := time.January; m <= time.December; m++ {
		if strings.HasPrefix(strings.ToLower(m.String()), s[:3]) {
			return m
		}
	}
	return 0
}

// queryPeriod returns the time the query names: the union of the calendar
// days ("on 13 October, 2023", "October 13, 2023", "2023-10-13") and months
// ("in July 2023") it mentions or, failing those, the years ("in 2022").
// Dates are read in loc. A month without a year ("in May") names nothing:
// it could be any year's.
func queryPeriod(q string, loc *time.Location) period {
	var p period
	if !strings.ContainsAny(q, "0123456789") {
		return p // every form below holds a year
	}
	add := func(from, to time.Time) {
		f, t := ns(from), ns(to)
		if !p.named() {
			p = period{f, t}
			return
		}
		p.from, p.to = min(p.from, f), max(p.to, t)
	}
	day := func(y, m, d int) {
		if m < 1 || m > 12 || d < 1 {
			return
		}
		from := time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)
		if from.Day() != d {
			return // 31 February
		}
		add(from, from.AddDate(0, 0, 1))
	}
	covered := make([]bool, len(q))
	mark := func(loc []int) {
		for i := loc[0]; i < loc[1]; i++ {
			covered[i] = true
		}
	}
	for _, m := range dayMonthYear().FindAllStringSubmatchIndex(q, -1) {
		d, _ := strconv.Atoi(q[m[2]:m[3]])
		y, _ := strconv.Atoi(q[m[6]:m[7]])
		day(y, int(monthOf(q[m[4]:m[5]])), d)
		mark(m)
	}
	for _, m := range monthDayYear().FindAllStringSubmatchIndex(q, -1) {
		if covered[m[0]] {
			continue
		}
		d, _ := strconv.Atoi(q[m[4]:m[5]])
		y, _ := strconv.Atoi(q[m[6]:m[7]])
		day(y, int(monthOf(q[m[2]:m[3]])), d)
		mark(m)
	}
	for _, m := range isoDate().FindAllStringSubmatchIndex(q, -1) {
		y, _ := strconv.Atoi(q[m[2]:m[3]])
		mo, _ := strconv.Atoi(q[m[4]:m[5]])
		d, _ := strconv.Atoi(q[m[6]:m[7]])
		day(y, mo, d)
		mark(m)
	}
	for _, m := range monthYear().FindAllStringSubmatchIndex(q, -1) {
		if covered[m[0]] || covered[m[1]-1] {
			continue
		}
		y, _ := strconv.Atoi(q[m[4]:m[5]])
		from := time.Date(y, monthOf(q[m[2]:m[3]]), 1, 0, 0, 0, 0, loc)
		add(from, from.AddDate(0, 1, 0))
		mark(m)
	}
	if p.named() {
		return p
	}
	for _, m := range yearOnly().FindAllStringSubmatchIndex(q, -1) {
		y, _ := strconv.Atoi(q[m[2]:m[3]])
		from := time.Date(y, time.January, 1, 0, 0, 0, 0, loc)
		add(from, from.AddDate(1, 0, 0))
	}
	return p
}

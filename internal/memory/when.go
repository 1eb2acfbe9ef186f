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
	// unitsAgo is "5 days ago", "a week ago", "four weeks ago", "a couple
	// of months ago".
	unitsAgo = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a\s+)?couple\s+of)\s+(day|week|month|year)s?\s+ago\b`)
	})
	yesterday = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\byesterday\b`) })
)

// countWords are the spelled-out counts unitsAgo reads.
var countWords = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

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
// Dates are read in at's location. A month without a year ("in May") names
// nothing: it could be any year's. A query with no date is read for a time
// relative to at, the time it is asked (see agoPeriod).
func queryPeriod(q string, at time.Time) period {
	if p := datePeriod(q, at.Location()); p.named() {
		return p
	}
	return agoPeriod(q, at)
}

// agoPeriod returns the days a query names relative to at, the time it is
// asked: "yesterday", "5 days ago", "four weeks ago", "two months ago"
// (the union when it names several). A count of weeks, months or years is
// rough ("four weeks ago" is said of 25 to 31 days), so the span is widened
// by half the unit on each side, at most 15 days.
func agoPeriod(q string, at time.Time) period {
	var p period
	add := func(d time.Time, half time.Duration) {
		day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, d.Location())
		f, t := ns(day.Add(-half)), ns(day.AddDate(0, 0, 1).Add(half))
		if !p.named() {
			p = period{f, t}
			return
		}
		p.from, p.to = min(p.from, f), max(p.to, t)
	}
	if !containsFold(q, "ago") && !containsFold(q, "yesterday") {
		return p // the words every form below holds (a regexp costs more)
	}
	const day = 24 * time.Hour
	if yesterday().MatchString(q) {
		add(at.AddDate(0, 0, -1), 0)
	}
	for _, m := range unitsAgo().FindAllStringSubmatch(q, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			n = countWords[strings.ToLower(m[1])]
			if n == 0 {
				n = 2 // a couple of
			}
		}
		switch strings.ToLower(m[2]) {
		case "day":
			add(at.AddDate(0, 0, -n), 0)
		case "week":
			add(at.AddDate(0, 0, -7*n), 3*day)
		case "month":
			add(at.AddDate(0, -n, 0), 15*day)
		case "year":
			add(at.AddDate(-n, 0, 0), 15*day)
		}
	}
	return p
}

// datePeriod is queryPeriod's reading of the calendar dates a query names.
func datePeriod(q string, loc *time.Location) period {
	var p period
	if !hasDigits(q, 4) {
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

// containsFold reports whether s holds word (ASCII lower case) in any
// case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for j < len(word) && s[i+j]|0x20 == word[j] {
			j++
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// hasDigits reports whether s holds n ASCII digits in a row.
func hasDigits(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			if run++; run == n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

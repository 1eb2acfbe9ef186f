package memory

import "testing"

// mentionsTime answers as temporalText does, including where it skips the
// expression.
func TestMentionsTime(t *testing.T) {
	cases := []struct {
		name string
		text string
		want bool
	}{
		{"no time", "the user likes green tea", false},
		{"a weekday", "We met on Tuesday at the cafe", true},
		{"yesterday upper case", "YESTERDAY it rained", true},
		{"last week", "they moved last week", true},
		{"last with two spaces", "they moved last  week", false},
		{"next month", "Next month: the exam", true},
		{"this morning", "this morning's run", true},
		{"a month", "born in August", true},
		{"a month inside a word", "an augustinian monk", false},
		{"a year", "since 1998", true},
		{"a date", "due 3/14", true},
		{"digits, no time", "room 42", false},
		{"ago", "two days ago", true},
		{"ago inside a word", "moved to Chicago", false},
		{"day inside a word", "a daydream", false},
		{"may, the verb", "it may rain", true},
		{"Kelvin sign for k", "last wee\u212Aend", true},
		{"long s for s", "la\u017Ft week", true},
		{"non-ASCII, no time", "le thé est prêt", false},
		{"empty", "", false},
		{"underscore joins words", "last_week and today_", false},
		{"weekend after last", "last weekend", true},
		{"a date of three digits", "123/4 and 1/234", false},
		{"a date after a letter", "x12/3", false},
		{"a date in a path", "see 1/2/3", true},
		{"a year inside a number", "x2024 and 20245", false},
		{"a year at the end", "back in 2024", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if want := temporalText().MatchString(tc.text); want != tc.want {
				t.Fatalf("the case is wrong: temporalText says %v", want)
			}
			if got := mentionsTime(tc.text); got != tc.want {
				t.Errorf("mentionsTime(%q) = %v; want %v", tc.text, got, tc.want)
			}
		})
	}
}

func FuzzMentionsTime(f *testing.F) {
	for _, s := range []string{"last week", "Tuesday", "1999", "3/4", "this Morning", "la\u017Ft night", "wee\u212Aend", "nothing here", "Chicago", "DECEMBER"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := mentionsTime(s), temporalText().MatchString(s); got != want {
			t.Fatalf("mentionsTime(%q) = %v; temporalText says %v", s, got, want)
		}
	})
}

// The cheap tests queryPeriod runs before its regexps.
func TestPeriodPrefilters(t *testing.T) {
	for _, tc := range []struct {
		name, s, word string
		want          bool
	}{
		{"lower", "two weeks ago", "ago", true},
		{"upper", "TWO WEEKS AGO", "ago", true},
		{"mixed", "YesterDay we met", "yesterday", true},
		{"at the end", "it was yesterda", "yesterday", false},
		{"absent", "what did I say", "ago", false},
		{"empty", "", "ago", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := containsFold(tc.s, tc.word); got != tc.want {
				t.Errorf("containsFold(%q, %q) = %v", tc.s, tc.word, got)
			}
		})
	}
	for _, tc := range []struct {
		name, s string
		want    bool
	}{
		{"a year", "in 2023", true},
		{"an iso date", "2023-10-13", true},
		{"short numbers", "week 12, day 3 of 365", false},
		{"none", "no digits", false},
		{"at the end", "year 1999", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasDigits(tc.s, 4); got != tc.want {
				t.Errorf("hasDigits(%q, 4) = %v", tc.s, got)
			}
		})
	}
}

package memory

import (
	"context"
	"testing"
	"time"
)

func TestQueryPeriod(t *testing.T) {
	utc := func(y int, m time.Month, d int) int64 { return ns(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)) }
	for _, tc := range []struct {
		name string
		q    string
		want period
	}{
		{"day month year", "what did she say on 13 October, 2023?", period{utc(2023, 10, 13), utc(2023, 10, 14)}},
		{"ordinal", "which book on 8th December, 2023", period{utc(2023, 12, 8), utc(2023, 12, 9)}},
		{"month day year", "What did he share on October 13, 2023?", period{utc(2023, 10, 13), utc(2023, 10, 14)}},
		{"no space after comma", "the picture shared on December 1,2023", period{utc(2023, 12, 1), utc(2023, 12, 2)}},
		{"iso", "notes from 2024-02-29", period{utc(2024, 2, 29), utc(2024, 3, 1)}},
		{"month year", "Where did they travel in July 2022?", period{utc(2022, 7, 1), utc(2022, 8, 1)}},
		{"abbreviated month", "any news from Sept 2021", period{utc(2021, 9, 1), utc(2021, 10, 1)}},
		{"year", "what happened in 2023?", period{utc(2023, 1, 1), utc(2024, 1, 1)}},
		{"span of two", "between 11 August, 2023 and 15 August, 2023", period{utc(2023, 8, 11), utc(2023, 8, 16)}},
		{"month and day win over year", "in March 2020 and in 2021", period{utc(2020, 3, 1), utc(2020, 4, 1)}},
		{"month without year", "what did I do in May?", period{}},
		{"may as a verb", "may I ask what 7 plus 2 is", period{}},
		{"no date", "what is my dog called", period{}},
		{"impossible day leaves the year", "on 31 February, 2023", period{utc(2023, 1, 1), utc(2024, 1, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := queryPeriod(tc.q, time.UTC); got != tc.want {
				t.Errorf("queryPeriod(%q) = %v…%v, want %v…%v", tc.q, fromNS(got.from), fromNS(got.to), fromNS(tc.want.from), fromNS(tc.want.to))
			}
		})
	}
}

func TestRecallPrefersNamedDate(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	on := func(y int, m time.Month, d int) *time.Time { t := time.Date(y, m, d, 18, 0, 0, 0, time.UTC); return &t }
	ids := seed(t, s,
		Memory{Text: "Went to a concert with friends, loud and fun", Kind: KindEpisode, EventTime: on(2024, 3, 2)},
		Memory{Text: "Went to a concert downtown", Kind: KindEpisode, EventTime: on(2024, 7, 20)},
		Memory{Text: "Went to a concert in the park with friends", Kind: KindEpisode, EventTime: on(2024, 11, 9)},
	)
	for _, tc := range []struct {
		name string
		q    string
		want int64
	}{
		{"month", "which concert did I go to in July 2024?", ids[1]},
		{"day", "what concert was on 9 November, 2024", ids[2]},
		{"told a few days later", "the concert on 18 July, 2024", ids[1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Recall(ctx, Query{Text: tc.q, Peek: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[0].ID != tc.want {
				t.Fatalf("Recall(%q) = %q, want first %d", tc.q, texts(got), tc.want)
			}
		})
	}
}

func TestRecallReplyToMatchingQuestion(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	const th = "chat"
	ids := seed(t, s,
		Memory{Text: "Ana: I cooked all weekend, the kitchen is a mess", Thread: th},
		Memory{Text: "Ben: Nice! Which dish turned out best in the end?", Thread: th},
		Memory{Text: "Ana: A lemon risotto, creamy and bright", Thread: th},
		Memory{Text: "Ana: Thanks, talk soon", Thread: th},
		Memory{Text: "Ana: I picked up a new cookbook at the market", Thread: th},
		Memory{Text: "Ben: The market was crowded today", Thread: th},
	)
	got, err := s.Recall(ctx, Query{Text: "which dish turned out best for Ana?", Peek: true, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[int64]int{}
	for i, r := range got {
		pos[r.ID] = i + 1
	}
	// the reply (no word in common with the query) follows the question that
	// matches, and ranks above what merely precedes the question
	if pos[ids[2]] == 0 || (pos[ids[0]] != 0 && pos[ids[0]] < pos[ids[2]]) {
		t.Fatalf("Recall = %q: the answer to the matching question should rank above the memory before it", texts(got))
	}
}

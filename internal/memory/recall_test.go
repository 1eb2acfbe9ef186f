package memory

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
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
		// relative to the time asked, 20 May 2024 15:30
		{"yesterday", "what did I cook yesterday?", period{utc(2024, 5, 19), utc(2024, 5, 20)}},
		{"days ago", "the film I saw 5 days ago", period{utc(2024, 5, 15), utc(2024, 5, 16)}},
		{"a week ago", "the wedding I went to a week ago", period{utc(2024, 5, 10), utc(2024, 5, 17)}},
		{"weeks ago in words", "What did I mention four weeks ago?", period{utc(2024, 4, 19), utc(2024, 4, 26)}},
		{"months ago", "the museum I visited two months ago", period{utc(2024, 3, 5), utc(2024, 4, 5)}},
		{"a couple of", "a couple of days ago", period{utc(2024, 5, 18), utc(2024, 5, 19)}},
		{"union", "yesterday and 3 days ago", period{utc(2024, 5, 17), utc(2024, 5, 20)}},
		{"a date wins over a relative time", "last week, on 2 March, 2023", period{utc(2023, 3, 2), utc(2023, 3, 3)}},
		{"how many days ago names none", "how many days ago did I run?", period{}},
		{"ago without a count", "long ago", period{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := queryPeriod(tc.q, time.Date(2024, 5, 20, 15, 30, 0, 0, time.UTC)); got != tc.want {
				t.Errorf("queryPeriod(%q) = %v…%v, want %v…%v", tc.q, fromNS(got.from), fromNS(got.to), fromNS(tc.want.from), fromNS(tc.want.to))
			}
		})
	}
}

// concertsOn stores three concert episodes told on the given days, each at
// 18:00 UTC, and returns their ids.
func concertsOn(t *testing.T, s Store, days ...time.Time) []int64 {
	t.Helper()
	texts := []string{"Went to a concert with friends, loud and fun", "Went to a concert downtown", "Went to a concert in the park with friends"}
	ms := make([]Memory, len(days))
	for i, d := range days {
		at := time.Date(d.Year(), d.Month(), d.Day(), 18, 0, 0, 0, time.UTC)
		ms[i] = Memory{Text: texts[i], Kind: KindEpisode, EventTime: &at}
	}
	return seed(t, s, ms...)
}

// wantFirst checks, case by case, that recall ranks the wanted memory first.
func wantFirst(t *testing.T, s Store, cases []firstCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Recall(context.Background(), Query{Text: tc.q, Peek: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[0].ID != tc.want {
				t.Fatalf("Recall(%q) = %q, want first %d", tc.q, texts(got), tc.want)
			}
		})
	}
}

type firstCase struct {
	name string
	q    string
	want int64
}

func TestRecallPrefersNamedDate(t *testing.T) {
	s, _, _ := newStore(t)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	ids := concertsOn(t, s, day(2024, 3, 2), day(2024, 7, 20), day(2024, 11, 9))
	wantFirst(t, s, []firstCase{
		{"month", "which concert did I go to in July 2024?", ids[1]},
		{"day", "what concert was on 9 November, 2024", ids[2]},
		{"told a few days later", "the concert on 18 July, 2024", ids[1]},
	})
}

func TestRecallPrefersTimeAgo(t *testing.T) {
	s, _, _ := newStore(t) // its clock: 1 March 2026
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	ids := concertsOn(t, s, day(2026, 1, 4), day(2026, 2, 1), day(2026, 2, 22))
	wantFirst(t, s, []firstCase{
		{"weeks", "which concert did I go to four weeks ago?", ids[1]},
		{"months", "the concert two months ago", ids[0]},
		{"days", "the concert I went to 7 days ago", ids[2]},
	})
}

func TestRecallReplyToMatchingQuestion(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	// the mechanism: a reply inherits more (AnswerSpread) than what came
	// before (Spread)
	tune := DefaultTuning
	tune.Spread, tune.AnswerSpread, tune.LengthPrior = 0.5, 0.85, 0
	s.SetTuning(tune)
	say := func(who string, role Role, text string) utterance {
		return utterance{Speaker: who, Role: role, Text: text}
	}
	ids, err := recordExchange(ctx, s, exchange{Thread: "chat", Session: "1", Said: []utterance{
		say("Ana", RoleUser, "I cooked all weekend, the kitchen is a mess"),
		say("Ben", RoleAssistant, "Nice! Which dish turned out best in the end?"),
		say("Ana", RoleUser, "A lemon risotto, creamy and bright"),
		say("Ana", RoleUser, "Thanks, talk soon"),
		say("Ana", RoleUser, "I picked up a new cookbook at the market"),
		say("Ben", RoleAssistant, "The market was crowded today"),
	}})
	if err != nil {
		t.Fatal(err)
	}
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

// In a conversation with the assistant, relevance spreads within the
// exchange (a message and the reply to it) and from a reply to the
// message after it, not to the exchanges around: those are other topics
// that would crowd out the other matches.
func TestRecallSpreadStaysInExchange(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	tune := DefaultTuning
	tune.VectorWeight, tune.LengthPrior = 0, 0
	s.SetTuning(tune)
	var ids []int64
	for _, r := range [][2]string{
		{"My sister moved to Lisbon last spring", "Lisbon is lovely, the trams are famous"},
		{"Can you suggest a present for a gardener?", "Seed kits, pruning shears or a kneeling pad"},
		{"How do I repot a cactus?", "Use thick leather and a dry gritty mix"},
	} {
		got, err := recordExchange(ctx, s, exchange{Thread: "web:1", Session: "1", Said: []utterance{
			{Speaker: "Sam", Role: RoleUser, Text: r[0]}, {Speaker: "Reverie", Role: RoleAssistant, Text: r[1]}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	// memories reached by the vector ranking alone score 0 (weight 0)
	rank := func(q string) ([]Scored, error) {
		got, err := s.Rank(ctx, Query{Text: q, Limit: 10})
		return slices.DeleteFunc(got, func(x Scored) bool { return x.Score <= 0 }), err
	}
	got, err := rank("what present for the gardener")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != ids[2] || got[1].ID != ids[3] {
		t.Fatalf("Rank = %v, want the matching message %d and its reply %d only", got, ids[2], ids[3])
	}
	// the user's answer to a question the assistant asked is reached
	got, err = rank("pruning shears and kneeling pad")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != ids[3] || !slices.ContainsFunc(got, func(x Scored) bool { return x.ID == ids[4] }) {
		t.Fatalf("Rank = %v, want the reply %d, its message and the message after it %d", got, ids[3], ids[4])
	}
	// ExchangeSpread is the weight within an exchange, whatever the
	// chain's Spread and AnswerSpread: at 0 nothing spreads
	tune.ExchangeSpread = 0
	s.SetTuning(tune)
	got, err = rank("what present for the gardener")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != ids[2] {
		t.Fatalf("Rank with ExchangeSpread 0 = %v, want the matching message %d only", got, ids[2])
	}
}

// Ranking features key on stored fields: a fact written "Note: …" has no
// speaker, an episode's speaker is its column, and spreading follows the
// episodes of one session only.
func TestRecallKeysOnStoredFields(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	fact := seed(t, s, Memory{Text: "Ana: the garden needs watering twice a week"})[0]
	ep, err := recordExchange(ctx, s, exchange{Thread: "chat", Session: "2", Said: []utterance{
		{Speaker: "Ana", Role: RoleUser, Text: "The garden needs watering every evening now"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Recall(ctx, Query{Text: "what did Ana say about watering the garden", Peek: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0].ID != ep[0] {
		t.Fatalf("Recall = %q: the episode Ana said should come before the fact written %q", texts(got), "Ana: …")
	}
	if got[0].Speaker != "Ana" || got[0].Role != RoleUser || got[0].Session != "2" || got[0].Kind != KindEpisode || got[0].Source != SourceConversation {
		t.Errorf("episode read back as %+v", got[0].Memory)
	}
	m, err := s.Get(ctx, fact)
	if err != nil || m.Speaker != "" {
		t.Errorf("fact %+v (%v): no speaker is read from its text", m, err)
	}

	// sessions: relevance does not spread across them
	a, err := recordExchange(ctx, s, exchange{Thread: "t2", Session: "a", Said: []utterance{{Role: RoleUser, Text: "which kayak should I rent on the lake"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := recordExchange(ctx, s, exchange{Thread: "t2", Session: "b", Said: []utterance{{Role: RoleAssistant, Text: "Bring sunscreen tomorrow"}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.Recall(ctx, Query{Text: "kayak lake", Peek: true, Kinds: []Kind{KindEpisode}, Thread: "t2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.ID != b[0] {
			continue
		}
		own := 0.0
		if r.VecRank > 0 {
			own = DefaultTuning.VectorWeight / (DefaultTuning.RRFK + float64(r.VecRank))
		}
		if math.Abs(r.Fused-own) > 1e-9 {
			t.Fatalf("the next session's episode has fused %v, own %v: it was reached by spreading", r.Fused, own)
		}
	}
	if len(got) == 0 || got[0].ID != a[0] {
		t.Fatalf("Recall = %q", texts(got))
	}
}

func TestRecordExchange(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	at := time.Date(2026, 2, 3, 9, 30, 0, 0, time.UTC)
	for i := range 2 {
		ids, err := recordExchange(ctx, s, exchange{Thread: "web:x", Session: SessionOf(at, nil), At: at, Said: []utterance{
			{Role: RoleUser, Text: "Thanks!"},
			{Role: RoleAssistant, Text: "  "},
			{Role: RoleAssistant, Text: "You are welcome."},
		}})
		if err != nil || len(ids) != 2 {
			t.Fatalf("round %d: ids %v, %v", i, ids, err)
		}
	}
	// the same words said twice are two episodes; a fact with them is still one
	n, _ := s.Count(ctx, false)
	if n != 4 {
		t.Errorf("%d memories, want 4 episodes", n)
	}
	f1 := seed(t, s, Memory{Text: "Thanks!"})[0]
	f2 := seed(t, s, Memory{Text: "thanks"})[0]
	if f1 != f2 {
		t.Errorf("facts with equal text stored twice (%d, %d)", f1, f2)
	}
	ids, err := recordExchange(ctx, s, exchange{Thread: "web:x", Said: []utterance{
		{Role: RoleUser, Text: "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"},
		{Role: RoleAssistant, Text: "Please do not paste keys here."},
	}})
	if !errors.Is(err, ErrSecret) || len(ids) != 1 {
		t.Errorf("secret: ids %v, err %v; want the reply stored and ErrSecret", ids, err)
	}
	if _, err := recordExchange(ctx, s, exchange{Said: []utterance{{Role: "narrator", Text: "x"}}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown role: %v", err)
	}
	// links survive a reopen of the store
	s.Shutdown(ctx)
	s2 := openStore(t, path, embed.NewOffline(0), clk)
	got, err := s2.Recall(ctx, Query{Text: "welcome", Peek: true, Kinds: []Kind{KindEpisode}})
	if err != nil || len(got) == 0 || got[0].Session != "2026-02-03" || got[0].EventTime == nil || !got[0].EventTime.Equal(at) {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
}

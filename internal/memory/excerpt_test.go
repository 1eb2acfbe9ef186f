package memory

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/evidence"
)

// longReply is an assistant's reply of the kind that fills prompts: one
// sentence about the sneakers among many that are not.
var longReply = strings.Join([]string{
	"Great question about sandals!",
	"Teva and Merrell both make durable straps that last for years, and their latest collections are worth a look.",
	"Chaco is another brand known for adjustable straps and a lifetime repair programme.",
	"For stores, REI and Zappos carry all three and have generous return policies.",
	"As for your old sneakers, a shoe rack in the closet keeps them aired out and stops the smell.",
	"Baking soda overnight helps too.",
	"When you shop, try sandals on in the afternoon, when your feet are at their largest.",
	"Look for a contoured footbed and a heel strap if you plan to hike.",
	"Check the stitching where the straps meet the sole, since that is where cheap pairs fail first.",
	"Finally, break new sandals in gradually over a week or two.",
}, " ")

func TestExcerpt(t *testing.T) {
	list := "Here are some hotels in Lisbon you might like, each a short walk from the river and the old town.\n\n" +
		"1. **Memmo Alfama**: A boutique hotel with a rooftop pool. The views over the Tagus are superb.\n" +
		"2. **Santiago de Alfama**: Quiet rooms in a restored palace.\n" +
		"   Breakfast is served in the courtyard, and the staff arrange tram tours.\n" +
		"3. **Lisboa Pessoa**: Close to the Chiado shops and theatres, with a literary theme throughout.\n\n" +
		"All three fill up quickly in summer, so it is worth booking a couple of months ahead if you can. " +
		"Prices are lower from November to March, and many hotels offer a free night for stays of a week or longer."
	code := "You can rotate those files with a small script. Save it somewhere on your path and make it executable first.\n\n" +
		"```sh\n#!/bin/sh\n# rotate the logs. Keep seven.\nfor f in /var/log/app/*.log; do\n  gzip -k \"$f\" && : > \"$f\"\ndone\n```\n\n" +
		"Run it from cron every night at two, when nothing else is writing to the disk and the backup has finished. " +
		"If the disk is small, keep fewer copies and compress the older ones harder with xz. " +
		"You can also ship the compressed files to object storage once a week and delete them locally afterwards. " +
		"Remember to test a restore from those copies now and then, because a backup nobody has restored is only a hope."
	german := "Frau Müller wohnt seit 2019 in Zürich, gleich neben dem Bahnhof, in einer kleinen Wohnung. " +
		"Sie arbeitet als Ärztin in einem großen Krankenhaus am Stadtrand und fährt jeden Tag mit dem Fahrrad. " +
		"Ihr Bruder lebt in Hamburg und besucht sie zweimal im Jahr, meistens im Frühling und im Herbst. " +
		"Im Sommer reisen beide gern nach Italien, an den Gardasee oder nach Sizilien, wo ihre Großeltern herkamen. " +
		"Dort essen sie am liebsten frische Pasta 🍝 und trinken abends einen Espresso auf der Piazza. " +
		"Im Winter gehen sie in den Bergen Ski fahren, wenn es genug Schnee gibt und die Lifte offen sind. " +
		"Zu Weihnachten kocht ihre Mutter immer ein großes Essen für die ganze Familie."
	japanese := strings.Repeat("今日はとても良い天気でした。", 25) + "友達と Kyoto へ行きました！" + strings.Repeat("散歩をして、お茶を飲みました。", 20)
	cases := []struct {
		name  string
		text  string
		query string
		want  string // "" when the memory is to be shown whole
	}{
		{"a long reply is cut to the matching sentence and, as it is short, the one after", longReply, "Where do I keep my old sneakers now?",
			"… As for your old sneakers, a shoe rack in the closet keeps them aired out and stops the smell. Baking soda overnight helps too. …"},
		{"two matches keep their order and one gap between them", longReply, "Which brand has a repair programme, and where should I check the stitching?",
			"… Chaco is another brand known for adjustable straps and a lifetime repair programme. For stores, REI and Zappos carry all three and have generous return policies. … Check the stitching where the straps meet the sole, since that is where cheap pairs fail first. Finally, break new sandals in gradually over a week or two."},
		{"failing the query's words, the kinds of its nouns locate the part", longReply + " My brother gave me his old guitar, and I practise on it most evenings.", "How many musical instruments do I own?",
			"… My brother gave me his old guitar, and I practise on it most evenings."},
		{"a short memory stays whole", "I keep my old sneakers under the bed.", "Where do I keep my sneakers?", ""},
		{"no part holds the query's words: whole", longReply, "What is the capital of Mongolia?", ""},
		{"an excerpt keeping most of the text is not worth it: whole", longReply, "Which sandals straps sneakers stores shop hike stitching footbed Teva Chaco?", ""},
		{"a list item is kept whole, never cut mid-way (and long, it brings no context)", list, "Where is breakfast served in the courtyard?",
			"… 2. **Santiago de Alfama**: Quiet rooms in a restored palace.\n   Breakfast is served in the courtyard, and the staff arrange tram tours. …"},
		{"a code block is kept whole with its fences", code, "How did you say to gzip the logs?",
			"… ```sh\n#!/bin/sh\n# rotate the logs. Keep seven.\nfor f in /var/log/app/*.log; do\n  gzip -k \"$f\" && : > \"$f\"\ndone\n```\n\nRun it from cron every night at two, when nothing else is writing to the disk and the backup has finished. …"},
		{"multibyte: accented words and an emoji", german, "Where do they drink espresso?",
			"… Dort essen sie am liebsten frische Pasta 🍝 und trinken abends einen Espresso auf der Piazza. Im Winter gehen sie in den Bergen Ski fahren, wenn es genug Schnee gibt und die Lifte offen sind. …"},
		{"multibyte: full-width sentence ends", japanese, "When did I go to Kyoto?",
			"… 友達と Kyoto へ行きました！散歩をして、お茶を飲みました。 …"},
		{"a question about time keeps the parts that name one", german, "When did she move, in which year?",
			"Frau Müller wohnt seit 2019 in Zürich, gleich neben dem Bahnhof, in einer kleinen Wohnung. Sie arbeitet als Ärztin in einem großen Krankenhaus am Stadtrand und fährt jeden Tag mit dem Fahrrad. …"},
		{"an abbreviation's dot ends no sentence", "I saw Dr. Okafor about my tooth on the way home from the office, which was closer than I expected. " + strings.Repeat("Then I went home and cooked a long dinner for the whole family, which took most of the evening. ", 6),
			"When did I see Dr. Okafor?", "I saw Dr. Okafor about my tooth on the way home from the office, which was closer than I expected. Then I went home and cooked a long dinner for the whole family, which took most of the evening. …"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := excerpt(c.text, newFocus(c.query, DefaultTuning.relWeights()))
			if c.want == "" {
				if ok {
					t.Fatalf("excerpt(%q) = %q, want the memory whole", c.query, got)
				}
				return
			}
			if !ok {
				t.Fatalf("excerpt(%q): shown whole, want %q", c.query, c.want)
			}
			if got != c.want {
				t.Errorf("excerpt(%q) =\n%q\nwant\n%q", c.query, got, c.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("excerpt is not valid UTF-8: %q", got)
			}
		})
	}
}

func TestSegment(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"sentences", "One. Two! Three? Four", []string{"One.", "Two!", "Three?", "Four"}},
		{"a lower-case word after a dot continues the sentence", "It costs approx. five euros. Then go.", []string{"It costs approx. five euros.", "Then go."}},
		{"initials and abbreviations", "J. K. Rowling met Dr. Okafor. Fine.", []string{"J. K. Rowling met Dr. Okafor.", "Fine."}},
		{"decimals and closing quotes", `It was 3.5 km. "Really?" she asked. Yes.`, []string{"It was 3.5 km.", `"Really?" she asked.`, "Yes."}},
		{"a list item with its indented continuation", "Intro line.\n- first item. Still first.\n  more of it\n- second\n\nAfter.", []string{"Intro line.", "- first item. Still first.\n  more of it", "- second", "After."}},
		{"a line right after a list item continues it (CommonMark's lazy continuation)", "- second\nAfter.", []string{"- second\nAfter."}},
		{"headings and tables", "# Title\n| a | b |\n|---|---|\n| 1 | 2 |\n\nText.", []string{"# Title", "| a | b |\n|---|---|\n| 1 | 2 |", "Text."}},
		{"a line right after a table is a row of it (GitHub's tables)", "| a | b |\n|---|---|\nText.", []string{"| a | b |\n|---|---|\nText."}},
		{"rows without a delimiter row are a paragraph", "| a | b |\n| 1 | 2 |", []string{"| a | b |\n| 1 | 2 |"}},
		{"a nested list's items are parts of their own", "1. Fruit. Ripe ones.\n   - apples\n   - pears\n2. Bread", []string{"1. Fruit. Ripe ones.", "- apples", "- pears", "2. Bread"}},
		{"a loose item's paragraphs are each whole", "- First. Part one.\n\n  Second paragraph. Still.\n- Next", []string{"- First. Part one.", "Second paragraph. Still.", "- Next"}},
		{"a block quote's sentences", "> Quoted one. Quoted two.\n\nMine.", []string{"> Quoted one.", "Quoted two.", "Mine."}},
		{"setext headings and thematic breaks are whole", "Title here. Yes\n===\n\n***\n\nText. More.", []string{"Title here. Yes\n===", "***", "Text.", "More."}},
		{"an indented code block is whole", "Run this:\n\n    go test ./... \n    echo done. Then\n\nDone.", []string{"Run this:", "go test ./... \n    echo done. Then", "Done."}},
		{"an unclosed fence runs to the end", "Before.\n```\ncode. More.\n\nstill code", []string{"Before.", "```\ncode. More.\n\nstill code"}},
		{"a longer closing fence closes, a different one does not", "````\n```\nx\n~~~~\n`````\nAfter.", []string{"````\n```\nx\n~~~~\n`````", "After."}},
		{"paragraph lines join", "One line\nwraps here. Next.\n\nNew paragraph.", []string{"One line\nwraps here.", "Next.", "New paragraph."}},
		{"full-width ends", "晴れ。雨！「本当？」はい", []string{"晴れ。", "雨！", "「本当？」", "はい"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, sp := range segment(c.text) {
				got = append(got, c.text[sp.from:sp.to])
			}
			if strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
				t.Errorf("segment(%q) =\n%q\nwant\n%q", c.text, got, c.want)
			}
		})
	}
}

// FuzzSegment checks the parts of any text are in order, do not overlap,
// are trimmed and not empty, and hold every character of the text but
// white space.
func FuzzSegment(f *testing.F) {
	for _, seed := range []string{"One. Two! Three? Four", "Intro line.\n- first item.\n  more\n- second\nAfter.",
		"# Title\n| a | b |\n|---|---|\n| 1 | 2 |\nText.", "Before.\n```\ncode.\n\nstill", "[a]: /url\n\nText. More [a].",
		"> q1\n> - item\n>\n> q2. Q3.", "1. a\n   - b\n     - c\n2. d", "<div>\nx. Y.\n</div>\n\nz", "\t\tcode\n\n晴れ。雨！"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		covered := make([]bool, len(text))
		last := 0
		for _, sp := range segment(text) {
			if sp.from < last || sp.to <= sp.from || sp.to > len(text) {
				t.Fatalf("segment(%q): part %v after %d", text, sp, last)
			}
			if p := text[sp.from:sp.to]; strings.TrimSpace(p) != p {
				t.Fatalf("segment(%q): part %q not trimmed", text, p)
			}
			for i := sp.from; i < sp.to; i++ {
				covered[i] = true
			}
			last = sp.to
		}
		for i, r := range text {
			if !covered[i] && !unicode.IsSpace(r) {
				t.Fatalf("segment(%q) loses %q at %d", text, r, i)
			}
		}
	})
}

func TestExcerptItem(t *testing.T) {
	closed := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	f := newFocus("Where do I keep my old sneakers now?", DefaultTuning.relWeights())
	cases := []struct {
		name    string
		m       Memory
		cut     bool
		label   string
		textHas string
	}{
		{"a long episode is an excerpt", Memory{Text: longReply, Kind: KindEpisode}, true, "episode, excerpt", "shoe rack"},
		{"a long fact stays whole", Memory{Text: longReply, Kind: KindFact}, false, "", "Great question"},
		{"a long superseded episode keeps its label", Memory{Text: longReply, Kind: KindEpisode, ValidTo: &closed}, true, "episode, superseded, excerpt", "shoe rack"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it, cut := excerptItem(c.m, f)
			if cut != c.cut || it.Label != c.label || !strings.Contains(it.Text, c.textHas) {
				t.Errorf("excerptItem = %+v, %v; want cut %v, label %q, text holding %q", it, cut, c.cut, c.label, c.textHas)
			}
			if !cut && it != memoryItem(c.m) {
				t.Errorf("a memory shown whole differs from memoryItem: %+v", it)
			}
		})
	}
}

// The words an excerpt looks for include every term recall's kindTerms
// searched for the query's nouns, for each relation (both on, whatever
// DefaultTuning weighs them: its derived words are off).
func TestFocusHoldsKindTerms(t *testing.T) {
	ti := newTextIndex()
	docs := []string{"a guitar lesson", "my violin teacher", "the dermatologist and the surgeon", "we married in June"}
	for i, d := range docs {
		ti.put(int64(i+1), d)
	}
	stemOf := map[uint32]string{}
	for s, id := range ti.terms {
		stemOf[id] = s
	}
	tune := DefaultTuning
	tune.KindWeight, tune.DerivedWeight = 0.2, 0.2
	w := tune.relWeights()
	for _, q := range []string{"how many musical instruments do I own?", "which doctors did I see", "when was my marriage"} {
		f := newFocus(q, w)
		kinds, _ := ti.kindTerms(q, nil, ti.queryTerms(q, nil), w)
		if len(kinds) == 0 {
			t.Errorf("%q: kindTerms found nothing; the test needs a query with kinds", q)
		}
		for _, k := range kinds {
			if st := stemOf[k.tid]; !f.stems[st] && !f.kindStems()[st] {
				t.Errorf("%q: recall searched %q, the excerpt's focus lacks it", q, stemOf[k.tid])
			}
		}
	}
}

// A packet with excerpts says so in its title, and its tokens are those of
// what it shows.
func TestPacketFitExcerpts(t *testing.T) {
	count := func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	f := newPacketFit(evidence.Packet{Kind: evidence.Memory, Title: RecallTitle, Meta: evidence.Meta{Source: "recall"}}, 4000, count)
	fc := newFocus("Where do I keep my old sneakers now?", DefaultTuning.relWeights())
	if !f.add(Memory{Text: longReply, Kind: KindEpisode}, fc) || !f.add(Memory{Text: "I keep them under the bed.", Kind: KindEpisode}, fc) {
		t.Fatal("the memories do not fit")
	}
	text, n := f.shownPacket()
	p, ok := evidence.Decode(text)
	if !ok || !strings.HasPrefix(p.Title, RecallTitle+RecallExcerptNote) || len(p.Items) != 2 {
		t.Fatalf("packet %s", text)
	}
	if p.Items[0].Label != "episode, excerpt" || p.Items[1].Label != "episode" {
		t.Errorf("labels %q, %q", p.Items[0].Label, p.Items[1].Label)
	}
	if n >= f.used || n < count(text)-2 || n > count(text)+2 {
		t.Errorf("tokens %d: whole %d, the shown packet counts %d", n, f.used, count(text))
	}
	whole := newPacketFit(evidence.Packet{Kind: evidence.Memory, Title: RecallTitle, Meta: evidence.Meta{Source: "recall"}}, 4000, count)
	whole.add(Memory{Text: "I keep them under the bed.", Kind: KindEpisode}, fc)
	if text, n := whole.shownPacket(); strings.Contains(text, RecallExcerptNote) || n != whole.used {
		t.Errorf("a packet without excerpts: %s (%d tokens, %d whole)", text, n, whole.used)
	}
}

// BenchmarkExcerptItem is the cost a turn pays per long recalled episode:
// reading a reply of ~1,300 characters for the query's words.
func BenchmarkExcerptItem(b *testing.B) {
	m := Memory{Text: longReply + " " + longReply[:400], Kind: KindEpisode}
	f := newFocus("Where do I keep my old sneakers now?", DefaultTuning.relWeights())
	b.ReportAllocs()
	for b.Loop() {
		if _, cut := excerptItem(m, f); !cut {
			b.Fatal("not cut")
		}
	}
}

package eval

import (
	"encoding/json"
	"testing"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/memory"
)

func TestAnswerMeasure(t *testing.T) {
	packet := func(items ...evidence.Item) memory.Recalled {
		return memory.Recalled{Text: evidence.Packet{Kind: evidence.Memory, Title: memory.RecallTitle, Items: items}.Encode()}
	}
	cases := []struct {
		name     string
		answer   json.RawMessage
		evidence []string
		shown    memory.Recalled
		check    bool // the answer occurs in an evidence turn
		in       bool // the shown lines hold it
	}{
		{"case and punctuation do not count", json.RawMessage(`"A shoe rack, in my closet"`), []string{"I keep them in a shoe-rack in my closet."},
			packet(evidence.Item{Text: "… keep them in a SHOE RACK in my closet! …", Label: "episode, excerpt"}), true, true},
		{"a number answer matches whole words only", json.RawMessage(`5`), []string{"I watched 5 MCU films."},
			packet(evidence.Item{Text: "I watched 15 films."}), true, false},
		{"an answer no evidence turn holds verbatim is not checked", json.RawMessage(`"You switched to less water"`), []string{"1 tablespoon for every 5 ounces"},
			packet(), false, false},
		{"an excerpt's gap is not bridged", json.RawMessage(`"red car"`), []string{"a red car"},
			packet(evidence.Item{Text: "the red … car", Label: "episode, excerpt"}), true, false},
		{"a whole line's ellipsis is text", json.RawMessage(`"wait and see"`), []string{"wait and see"},
			packet(evidence.Item{Text: "we shall wait… and see", Label: "episode"}), true, true},
		{"no answer", json.RawMessage(`null`), []string{"anything"}, packet(), false, false},
		{"accented and non-Latin letters are kept", json.RawMessage(`"Zürich"`), []string{"She lives in Zürich."},
			packet(evidence.Item{Text: "lives in zürich"}), true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := checkableAnswer(answerOf(c.answer), c.evidence)
			if (a != "") != c.check {
				t.Fatalf("checkableAnswer = %q, want checkable %v", a, c.check)
			}
			if a != "" && shownHolds(c.shown, a) != c.in {
				t.Errorf("shownHolds(%q) = %v, want %v", a, !c.in, c.in)
			}
		})
	}
}

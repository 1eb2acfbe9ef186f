package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTableIsGenerated checks that the committed table is what the
// generator makes from the installed WordNet (Debian's wordnet-base; CI
// installs it, and there the test fails rather than skips without it).
func TestTableIsGenerated(t *testing.T) {
	const dir = "/usr/share/wordnet"
	if _, err := os.Stat(filepath.Join(dir, "data.noun")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("WordNet is not installed (apt-get install wordnet-base): %v", err)
		}
		t.Skipf("WordNet is not installed (apt-get install wordnet-base): %v", err)
	}
	want, err := build(dir, DefaultMaxClosure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../words.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("internal/lexicon/words.bin (%d bytes) is not what the generator makes (%d bytes): run go generate ./internal/lexicon", len(got), len(want))
	}
}

func TestKeyOf(t *testing.T) {
	cases := []struct {
		name, lemma, want string
		ok                bool
	}{
		{"one word", "doctor", "doctor", true},
		{"multiword", "musical_instrument", "musical instrument", true},
		{"hyphen", "T-shirt", "t shirt", true},
		{"adjective marker", "galore(ip)", "galore", true},
		{"apostrophe", "cat's-paw", "", false},
		{"dot", "dr.", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := keyOf(c.lemma)
			if got != c.want || ok != c.ok {
				t.Errorf("keyOf(%q) = %q, %v; want %q, %v", c.lemma, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	cases := []struct {
		name, data string
	}{
		{"short synset line", "00001740 03 n\n"},
		{"bad word count", "00001740 03 n zz entity 0 000\n"},
		{"pointer list cut short", "00001740 03 n 01 entity 0 002 ~ 00001930 n 0000\n"},
		{"pointer to a missing synset", "00001740 03 n 01 entity 0 001 ~ 00001930 n 0000\n"},
		{"pointer with a bad part of speech", "00001740 03 n 01 entity 0 001 ~ 00001740 q 0000\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := emptyWordNet()
			files["data.noun"] = c.data
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := build(dir, DefaultMaxClosure); err == nil {
				t.Errorf("build accepted %q", c.data)
			}
		})
	}
	if _, err := build(t.TempDir(), DefaultMaxClosure); err == nil {
		t.Error("build accepted a directory without WordNet's files")
	}
}

// emptyWordNet returns the files of a WordNet with no words.
func emptyWordNet() map[string]string {
	files := map[string]string{}
	for _, p := range parts {
		files["data."+p.name], files["index."+p.name], files[p.name+".exc"] = "", "", ""
	}
	return files
}

// tinyWordNet is a WordNet in the files' format: thing → {instrument →
// {guitar, drum (→ snare drum)}, doctor/physician → {surgeon}}; "doctor"
// has a second, unattested sense (a degree) whose kind must not show. The
// verb "doctor"/"treat" (attested) derives, by lexical pointers, the
// noun's first word from its first ("doctor" → "doctor") and its second
// from its second ("treat" → "physician"); "drum" (verb, unattested)
// derives nothing.
var tinyWordNet = map[string]string{
	"data.noun": `  1 licence header line
00000001 03 n 01 thing 0 002 ~ 00000002 n 0000 ~ 00000005 n 0000 | a thing
00000002 06 n 02 musical_instrument 0 instrument 0 002 ~ 00000003 n 0000 ~ 00000004 n 0000 | plays
00000003 06 n 01 guitar 0 000 | strings
00000004 06 n 01 drum 0 001 ~ 00000007 n 0000 | beats
00000005 18 n 03 doctor 0 physician 0 Dr. 0 001 ~ 00000006 n 0000 | heals
00000006 18 n 01 surgeon 0 000 | cuts
00000007 06 n 01 snare_drum 0 000 | rattles
00000008 18 n 01 doctor 0 001 ~ 00000009 n 0000 | a degree
00000009 18 n 01 doctorate 0 000 | degree
`,
	"index.noun": `  1 licence header line
doctor n 2 1 ~ 2 1 00000005 00000008
drum n 1 1 ~ 1 1 00000004
guitar n 1 0 1 1 00000003
instrument n 1 1 ~ 1 1 00000002
musical_instrument n 1 1 ~ 1 1 00000002
physician n 1 1 ~ 1 1 00000005
thing n 1 1 ~ 1 1 00000001
`,
	"noun.exc": "doctores doctor\ngeese goose\n",
	"data.verb": `  1 licence header line
00000001 29 v 02 doctor 0 treat 0 002 + 00000005 n 0101 + 00000005 n 0202 01 + 08 00 | treat
00000002 29 v 01 drum 0 001 + 00000004 n 0101 01 + 08 00 | beat
`,
	"index.verb": `  1 licence header line
doctor v 1 1 + 1 1 00000001
treat v 1 1 + 1 1 00000001
drum v 1 1 + 1 0 00000002
`,
	"verb.exc": "doctored doctor\n",
	"data.adj": "", "index.adj": "", "adj.exc": "",
	"data.adv": "", "index.adv": "", "adv.exc": "",
}

func TestEntries(t *testing.T) {
	dir := t.TempDir()
	for name, body := range tinyWordNet {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wn, err := read(dir)
	if err != nil {
		t.Fatal(err)
	}
	rels, forms := entries(wn, 4)
	cases := []struct {
		name, key string
		rel       int
		want      []string // nil: none
	}{
		{"a two-word key, its synonym and all kinds below it (one-token words only)", "musical instrument", relKinds, []string{"drum", "guitar", "instrument"}},
		{"the attested sense only, with its synonyms (not Dr.)", "doctor", relKinds, []string{"physician", "surgeon"}},
		{"a closure over the bound (5 words > 4) is left out", "thing", relKinds, nil},
		{"a leaf has no kinds", "guitar", relKinds, nil},
		{"a lexical derivation: the word it points to, not the key itself", "doctor", relDerived, nil},
		{"a lexical derivation from the lemma's own word only", "treat", relDerived, []string{"physician"}},
		{"an unattested verb derives nothing", "drum", relDerived, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			if e := rels[c.key]; e != nil {
				got = sortedKeys(e[c.rel])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("relation %d of %q = %q, want %q", c.rel, c.key, got, c.want)
			}
		})
	}
	if rels["guitar"] != nil {
		t.Errorf("guitar has an entry: %v", rels["guitar"])
	}
	want := map[string]baseForm{"doctores": {"doctor", true}, "doctored": {"doctor", false}}
	if !maps.Equal(forms, want) {
		t.Errorf("forms = %v, want %v (geese has no key)", forms, want)
	}
}

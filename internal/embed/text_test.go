package embed

import "testing"

func TestCountWordsMatchesWords(t *testing.T) {
	for _, in := range []string{
		"", "  ...  ", "Hello, World!", "Caroline's dog", "I don't know", "Mel’s art",
		"in 2023 at 5pm", "Café crème", "Caroline's2 cats", "it'sgood", "rock'n'roll",
		"'quoted' words", "end's", "O'Brien's book", "x'", "a-b c_d", "日本語 text",
	} {
		t.Run(in, func(t *testing.T) {
			if got, want := CountWords(in), len(Words(in)); got != want {
				t.Errorf("CountWords(%q) = %d, want %d (%q)", in, got, want, Words(in))
			}
		})
	}
}

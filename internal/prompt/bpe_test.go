package prompt

import (
	"bytes"
	"compress/flate"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func init() {
	// tiktoken-go's default loader downloads the tables; the reference
	// encoder must read the loader module's embedded copies instead.
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
}

// The compacted tables are exactly the pinned loader module's: rerun
// `go generate ./internal/prompt` when this fails after a version bump.
func TestEmbeddedTablesMatchLoader(t *testing.T) {
	for _, name := range []string{EncodingCl100k, EncodingO200k} {
		t.Run(name, func(t *testing.T) {
			got, err := loadBPE(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || !maps.Equal(got, want) {
				t.Fatalf("embedded table has %d tokens, the loader's %d, and they differ", len(got), len(want))
			}
		})
	}
}

// A damaged table is an error naming the damage, never a wrong count.
func TestDamagedTable(t *testing.T) {
	raw, err := bpeFiles.ReadFile("bpe/" + EncodingCl100k + ".bpe")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	flip := bytes.Clone(plain)
	flip[len(flip)/2] ^= 0x40
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"wrong magic", append([]byte("XBPE1"), plain[5:]...), "bad magic"},
		{"flipped byte", flip, "checksum"},
		{"truncated", plain[:len(plain)/3], "checksum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readBPE(bytes.NewReader(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// tiktokenCount is the reference: tiktoken-go's own encoder (regular
// expressions) over the same offline tables.
func tiktokenCount(t testing.TB, encoding, s string) int {
	t.Helper()
	refMu.Lock()
	enc, ok := refEncoders[encoding]
	if !ok {
		var err error
		if enc, err = tiktoken.GetEncoding(encoding); err != nil {
			refMu.Unlock()
			t.Fatal(err)
		}
		refEncoders[encoding] = enc
	}
	refMu.Unlock()
	return len(enc.EncodeOrdinary(s))
}

var (
	refMu       sync.Mutex
	refEncoders = map[string]*tiktoken.Tiktoken{}
)

var bpeEdgeCases = []string{
	"",
	"hello world",
	"I'm sure you're right, they'LL say it's 'sup and we'VE 'd",
	"'s 't 're 've 'm 'll 'd 'S 'RE 'x '",
	"  leading spaces",
	"trailing spaces   ",
	"a  \t b\t\tc",
	"line\nbreak\r\nwindows\r\r\n\n\n  \n  indented\n\t\ttabs",
	"   \n",
	" \n \n  x",
	"12345678 1 22 333 4444 ١٢٣ ½ Ⅻ",
	"HTTPServer McDonald's ABCdef abcDEF ÀÉÎõü Ωmega ǅungla ǈ",
	"e\u0301 cafe\u0301 \u0301\u0301 a\u20dd",
	"日本語のテキストと中文文本，한국어 텍스트。",
	"emoji 🙂🙂 👩‍👩‍👧 flags 🇩🇪",
	"path /usr/local//bin/ and a/b\n/c //\n/",
	"punct!!! ??? ... --- (()) [[x]] {\"a\": 1} <tag attr='v'/>",
	"special <|endoftext|> and <|fim_prefix|> as text",
	"invalid \xff\xfe bytes \xc3\x28 here",
	"\u00a0nbsp\u2003em\u3000ideographic\u200bzero-width",
	"ʰmodifier ʰʰ ǅǅ Ǆǅǆ",
	strings.Repeat("x", 300) + " " + strings.Repeat("ab", 200),
	"tab\tafter\t 1 \t2\n\t3",
}

func TestBPEMatchesTiktoken(t *testing.T) {
	samples := append([]string{}, bpeEdgeCases...)
	for _, s := range calibrationSamples {
		samples = append(samples, s)
	}
	for _, enc := range []string{EncodingCl100k, EncodingO200k} {
		c, err := NewEncodingCounter(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples {
			if got, want := c.Count(s), tiktokenCount(t, enc, s); got != want {
				t.Errorf("%s: Count(%q) = %d, tiktoken-go says %d", enc, s, got, want)
			}
		}
	}
}

func FuzzBPEMatchesTiktoken(f *testing.F) {
	for _, s := range bpeEdgeCases {
		f.Add(s)
	}
	cl, _ := NewEncodingCounter(EncodingCl100k)
	o200, _ := NewEncodingCounter(EncodingO200k)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			return
		}
		if got, want := cl.Count(s), tiktokenCount(t, EncodingCl100k, s); got != want {
			t.Errorf("cl100k: Count(%q) = %d, tiktoken-go says %d", s, got, want)
		}
		if got, want := o200.Count(s), tiktokenCount(t, EncodingO200k, s); got != want {
			t.Errorf("o200k: Count(%q) = %d, tiktoken-go says %d", s, got, want)
		}
	})
}

// BenchmarkLoadBPE measures the one-time cost of reading a vocabulary (the
// first token count of a process pays it).
func BenchmarkLoadBPE(b *testing.B) {
	for _, name := range []string{EncodingCl100k, EncodingO200k} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := loadBPE(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFlatStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), MemoriesFile)
	f := NewFlat(path, func() time.Time { return time.Unix(0, 0) }, nil)
	ids := seed(t, f,
		Memory{Text: "Prefers tea over coffee"},
		Memory{Text: "Has a cat named Miso"},
		Memory{Text: "Works on the Reverie project\nin Go"},
	)
	if id, _ := f.Add(ctx, Memory{Text: "prefers tea over coffee."}); id != ids[0] {
		t.Errorf("duplicate got id %d, want %d", id, ids[0])
	}
	b, _ := os.ReadFile(path)
	if string(b) != "Prefers tea over coffee\nHas a cat named Miso\nWorks on the Reverie project in Go\n" {
		t.Fatalf("file:\n%s", b)
	}
	got, err := f.Recall(ctx, Query{Text: "what is the cat called?"})
	if err != nil || len(got) == 0 || got[0].ID != ids[1] {
		t.Fatalf("recall = %q, %v", texts(got), err)
	}
	if _, err := f.Add(ctx, Memory{Text: "token sk-abcdefghijklmnopqrstuvwxyz"}); !errors.Is(err, ErrSecret) {
		t.Errorf("secret: %v", err)
	}
	if id, err := f.Update(ctx, Memory{ID: ids[1], Text: "Has a cat named Tofu"}); err != nil || id != flatID("Has a cat named Tofu") {
		t.Fatalf("update = %d, %v", id, err)
	}
	if err := f.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	list, _ := f.List(ctx, Filter{})
	if len(list) != 2 || list[0].Text != "Has a cat named Tofu" {
		t.Fatalf("list = %+v", list)
	}
	if err := f.Close(ctx, ids[1], time.Time{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("close: %v", err)
	}
	if _, ok := VectorsOf(f); ok {
		t.Error("the flat store claims to keep vectors")
	}
}

func TestFlatCorruptEncoding(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), MemoriesFile)
	if err := os.WriteFile(path, []byte("\xef\xbb\xbfgood line\r\nbad \xff\xfe bytes\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFlat(path, nil, nil)
	list, err := f.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Text != "good line" || !strings.Contains(list[1].Text, "bad") {
		t.Fatalf("list = %+v", list)
	}
	// the file is left as it was until a write
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "\xff") {
		t.Error("file rewritten on read")
	}
}

func TestFlatConcurrentAdds(t *testing.T) {
	ctx := context.Background()
	f := NewFlat(filepath.Join(t.TempDir(), MemoriesFile), nil, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if _, err := f.Add(ctx, Memory{Text: "shared " + string(rune('a'+i))}); err != nil {
					t.Error(err)
				}
				if _, err := f.Add(ctx, Memory{Text: "own " + string(rune('a'+w)) + string(rune('a'+i))}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := f.Count(ctx, false); n != 50 {
		t.Errorf("count = %d, want 50", n)
	}
}

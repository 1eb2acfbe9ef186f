package sqlite

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestGroupCommit: callers that arrive while a batch is being written are
// written together in the next batch, every item exactly once, and each
// caller returns only after the batch holding its item was written.
func TestGroupCommit(t *testing.T) {
	var g GroupCommit[*int]
	var (
		mu      sync.Mutex
		batches [][]int
		written = map[int]bool{}
	)
	write := func(batch []*int) {
		mu.Lock()
		defer mu.Unlock()
		var b []int
		for _, v := range batch {
			b = append(b, *v)
			written[*v] = true
		}
		batches = append(batches, b)
	}
	// The first caller's write blocks until the others are queued.
	release := make(chan struct{})
	first := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		v := 0
		g.Write(&v, func(batch []*int) {
			close(first)
			<-release
			write(batch)
		})
	})
	<-first
	const callers = 8
	returned := make([]bool, callers+1)
	for c := 1; c <= callers; c++ {
		wg.Go(func() {
			v := c
			g.Write(&v, write)
			mu.Lock()
			defer mu.Unlock()
			if !written[c] {
				t.Errorf("caller %d returned before its item was written", c)
			}
			returned[c] = true
		})
	}
	for g.Queued() < callers {
		runtime.Gosched()
	}
	if n := g.Pending(); n != callers+1 {
		t.Fatalf("Pending = %d, want the %d queued and the one being written", n, callers)
	}
	close(release)
	wg.Wait()
	if len(batches) != 2 || !slices.Equal(batches[0], []int{0}) || len(batches[1]) != callers {
		t.Fatalf("batches %v: want [0] then the %d waiting callers together", batches, callers)
	}
	got := slices.Sorted(slices.Values(batches[1]))
	if !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("second batch %v", batches[1])
	}
	if g.Queued() != 0 || g.Pending() != 0 {
		t.Fatalf("%d items left queued, %d pending", g.Queued(), g.Pending())
	}
	// alone, a caller writes its own batch
	v := 42
	g.Write(&v, write)
	if last := batches[len(batches)-1]; !slices.Equal(last, []int{42}) {
		t.Fatalf("lone write's batch %v", last)
	}
}

// TestGroupCommitReturnsOnceWritten: a caller returns as soon as the batch
// holding its item is written, even while another caller (queued after
// that batch was taken) holds the writer's place for the next batch.
func TestGroupCommitReturnsOnceWritten(t *testing.T) {
	var g GroupCommit[int]
	gates := map[int]chan struct{}{0: make(chan struct{}), 1: make(chan struct{}), 3: make(chan struct{})}
	write := func(batch []int) { <-gates[batch[0]] } // the batch of items 1 and 2 waits for gates[1]
	waitFor := func(queued, pending int) {
		for g.Queued() != queued || g.Pending() != pending {
			runtime.Gosched()
		}
	}
	returned := make(chan int, 4)
	var wg sync.WaitGroup
	call := func(v int) { wg.Go(func() { g.Write(v, write); returned <- v }) }
	call(0)
	waitFor(0, 1) // 0 is being written
	call(1)
	waitFor(1, 2)
	call(2)
	waitFor(2, 3)
	close(gates[0])
	if v := <-returned; v != 0 {
		t.Fatalf("%d returned first, want 0", v)
	}
	waitFor(0, 2) // 1 and 2 are being written, together
	call(3)
	waitFor(1, 3)
	close(gates[1])
	// 3 takes the writer's place and waits for gates[3]; 1 and 2 return
	// meanwhile, their batch written.
	got := []int{<-returned, <-returned}
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("returned %v, want 1 and 2", got)
	}
	close(gates[3])
	wg.Wait()
	if v := <-returned; v != 3 {
		t.Fatalf("%d returned last, want 3", v)
	}
}

// TestGroupCommitHold: Hold runs while no batch is being written; the
// writes queued while it runs wait for it, then go in one batch; a Hold
// whose context has ended does not run.
func TestGroupCommitHold(t *testing.T) {
	var g GroupCommit[int]
	var (
		mu      sync.Mutex
		batches [][]int
		holding bool
	)
	write := func(batch []int) {
		mu.Lock()
		defer mu.Unlock()
		if holding {
			t.Error("a batch was written while Hold ran")
		}
		batches = append(batches, slices.Clone(batch))
	}
	var wg sync.WaitGroup
	if err := g.Hold(context.Background(), func() {
		mu.Lock()
		holding = true
		mu.Unlock()
		for v := range 3 {
			wg.Go(func() { g.Write(v, write) })
		}
		for g.Queued() < 3 {
			runtime.Gosched()
		}
		mu.Lock()
		holding = false
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(batches) != 1 || len(batches[0]) != 3 {
		t.Errorf("batches %v; want the three writes in one", batches)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.writer <- struct{}{} // a batch is being written
	ran := false
	if err := g.Hold(ctx, func() { ran = true }); err == nil || ran {
		t.Errorf("Hold with an ended context = %v, ran %v; want its error, not run", err, ran)
	}
	<-g.writer
}

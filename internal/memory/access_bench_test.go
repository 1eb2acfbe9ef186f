package memory

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkAccessFlush writes the access statistics of 255 memories
// recalled since the last flush (one short of accessFlushAt, which would
// wake the store's own writer to take the batch), in a store of 2,000
// episodes of ~600 characters (a conversation of ~1,000 turns): a flush of a
// full batch, as a long conversation makes one every ~30 turns. It reports
// the WAL frames (pages) the flush's commit wrote, which a checkpoint copies
// into the database again.
func BenchmarkAccessFlush(b *testing.B) {
	ctx := context.Background()
	s, _, path := newStoreTB(b)
	r := rand.New(rand.NewPCG(5, 5))
	ms := make([]Memory, 2_000)
	for i := range ms {
		var sb strings.Builder
		for sb.Len() < 600 {
			sb.WriteString(benchText(r, i))
			sb.WriteString(". ")
		}
		ms[i] = Memory{Text: sb.String(), Kind: KindEpisode, Thread: "web:long"}
	}
	ids, err := s.AddBatch(ctx, ms)
	if err != nil {
		b.Fatal(err)
	}
	var frames int64
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		for _, j := range r.Perm(len(ids))[:accessFlushAt-1] {
			s.access.add([]int64{ids[j]}, int64(i+1))
		}
		c0 := processCPU()
		b.StartTimer()
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU() - c0
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		frames += (fi.Size() - 32) / (4096 + 24)
		b.StartTimer()
	}
	b.ReportMetric(float64(frames)/float64(b.N), "wal-pages/op")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
}

package eventbus

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// benchPayload is a typical small event payload.
type benchPayload struct {
	Thread string `json:"thread"`
	Seq    int    `json:"seq"`
	Text   string `json:"text"`
}

func reportRate(b *testing.B, events int, start time.Time) {
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkPublish: one event per Publish, one transaction each, on a real
// temp file database.
func BenchmarkPublish(b *testing.B) {
	db, _ := tempDB(b)
	bus := openBus(b, db, Options{})
	ctx := context.Background()
	p := benchPayload{Thread: "web:default", Text: "a reminder fired"}
	b.ReportAllocs()
	start := time.Now()
	i := 0
	for ; b.Loop(); i++ {
		p.Seq = i
		if err := bus.Publish(ctx, "reminder.fired", p); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, i, start)
}

// BenchmarkPublishBatch: batches of 100 and 1000 events, one transaction
// per batch. events/s counts events, not batches.
func BenchmarkPublishBatch(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			db, _ := tempDB(b)
			bus := openBus(b, db, Options{})
			ctx := context.Background()
			msgs := make([]Message, size)
			b.ReportAllocs()
			start := time.Now()
			i := 0
			for ; b.Loop(); i++ {
				for j := range msgs {
					msgs[j] = Message{Topic: "memory.harvested", Payload: benchPayload{Thread: "web:default", Seq: i*size + j, Text: "a fact worth keeping"}}
				}
				if err := bus.PublishBatch(ctx, msgs); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, i*size, start)
		})
	}
}

// BenchmarkDeliver: end to end, Publish → committed → dispatcher → handler
// → cursor saved, with one subscriber, events published one at a time
// while the dispatcher runs. b.N events; the clock stops when the handler
// has seen the last one.
func BenchmarkDeliver(b *testing.B) {
	db, _ := tempDB(b)
	bus := openBus(b, db, Options{})
	got := make(chan struct{}, 1)
	var n int
	target := b.N
	if err := bus.Subscribe("bench", "bench.", func(ctx context.Context, ev extension.Event) error {
		n++
		if n == target {
			got <- struct{}{}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	runBus(b, bus)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := bus.Publish(ctx, "bench.tick", benchPayload{Seq: i}); err != nil {
			b.Fatal(err)
		}
	}
	<-got
	reportRate(b, b.N, start)
}

package web

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// rawUpgrade opens a WebSocket connection with a hand-written handshake and
// keeps only the TCP connection on the client side (no reader goroutine, no
// buffers), so that memory measured is the server's.
func rawUpgrade(tb testing.TB, addr, query string) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(c, "GET /api/v1/ws%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
		query, addr, testToken)
	// Read the response head byte by byte: nothing is buffered past it.
	var head []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(one); err != nil {
			tb.Fatalf("handshake: %v (%q)", err, head)
		}
		head = append(head, one[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 101") {
		tb.Fatalf("handshake: %q", head)
	}
	return c
}

func waitConnections(tb testing.TB, w *Web, n int) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for w.Connections() != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d connections registered, want %d", w.Connections(), n)
		}
		runtime.Gosched()
	}
}

// BenchmarkDeltaToFrame measures the latency the web channel adds between a
// provider token arriving (Stream.Delta, as the router calls it) and the
// WebSocket frame reaching a client on loopback, with and without 1,000
// idle connections open. The client's read is included, so this is an
// upper bound of the server's share.
func BenchmarkDeltaToFrame(b *testing.B) {
	for _, idle := range []int{0, 1000} {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			s := startWeb(b, "rate_per_second: 0\nmax_connections: 5000", &api.Services{})
			var raws []net.Conn
			for i := range idle {
				raws = append(raws, rawUpgrade(b, s.w.Addr().String(), fmt.Sprintf("?thread=web:idle%d", i)))
			}
			defer func() {
				for _, c := range raws {
					c.Close()
				}
			}()
			c := s.dial(b, "?thread=web:bench")
			waitConnections(b, s.w, idle+1)
			st, _ := s.w.OpenStream(context.Background(), chat.Address{Channel: ChannelName, Thread: "web:bench"})
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				_ = st.Delta("token ")
				if _, _, err := c.Read(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkIdleConnection measures the memory and goroutines one idle
// WebSocket connection costs the server (the client side is a bare TCP
// connection).
func BenchmarkIdleConnection(b *testing.B) {
	const n = 1000
	s := startWeb(b, "rate_per_second: 0\nmax_connections: 5000", &api.Services{})
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, 0, n)
		for i := range n {
			conns = append(conns, rawUpgrade(b, s.w.Addr().String(), fmt.Sprintf("?thread=web:m%d", i)))
		}
		waitConnections(b, s.w, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		g1 := runtime.NumGoroutine()
		used := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(used)/n, "bytes/conn")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/conn")
		for _, c := range conns {
			c.Close()
		}
		waitConnections(b, s.w, 0)
	}
}

// BenchmarkStreamFanOut streams deltas to many clients following the same
// thread at once and reports the frames delivered per second and the time
// until the last of them has each delta.
func BenchmarkStreamFanOut(b *testing.B) {
	for _, clients := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s := startWeb(b, "rate_per_second: 0\nmax_connections: 5000", &api.Services{})
			var got atomic.Int64
			arrived := make(chan struct{}, clients)
			var wg sync.WaitGroup
			ctx, cancel := context.WithCancel(context.Background())
			for range clients {
				c := s.dial(b, "?thread=web:fan")
				wg.Go(func() {
					for {
						if _, _, err := c.Read(ctx); err != nil {
							return
						}
						got.Add(1)
						arrived <- struct{}{}
					}
				})
			}
			waitConnections(b, s.w, clients)
			st, _ := s.w.OpenStream(context.Background(), chat.Address{Channel: ChannelName, Thread: "web:fan"})
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				t0 := time.Now()
				_ = st.Delta("token ")
				for range clients {
					<-arrived
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(got.Load())/elapsed.Seconds(), "frames/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-all-µs")
		})
	}
}

package apptest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/extensions/matrix/matrixtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// BenchmarkMatrixTurn measures what the Matrix channel adds to a turn: from
// the user's message event sent to the reply's event arriving at the
// user's client, with a scripted model that answers at once, in an
// encrypted and an unencrypted direct chat (Dendrite on loopback; the
// user's own client decrypts). It reports the median and p90 per turn.
//
//	go test -run '^$' -bench BenchmarkMatrixTurn -benchtime 30x ./internal/apptest
func BenchmarkMatrixTurn(b *testing.B) {
	for _, enc := range []bool{false, true} {
		b.Run(fmt.Sprintf("encrypted=%v", enc), func(b *testing.B) {
			benchTurns(b, enc)
		})
	}
}

func benchTurns(b *testing.B, encrypted bool) {
	srv := matrixtest.Start(b)
	w := &mxWorld{srv: srv, bot: srv.CreateUser(b, "reverie", mxBotPass), alice: srv.CreateUser(b, "alice", mxAlicePass),
		bob: "@bob:localhost", eve: "@eve:localhost"}
	h := startMatrixTB(b, w, WithEnv("REVERIE_MATRIX__EDITS=false", fmt.Sprintf("REVERIE_MATRIX__ENCRYPTION=%v", encrypted)))
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "ok " + lastUser(req)}
	})
	alice := srv.Login(b, "alice", mxAlicePass)
	room := alice.CreateRoom(b, encrypted, w.bot)
	alice.Wait(b, "the bot to join", joined(room, w.bot))
	alice.Send(b, room, "warm up")
	alice.Wait(b, "the warm-up answer", func(evs []*event.Event) bool { return botSaid(evs, room, w.bot, "ok warm up") })
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		text := fmt.Sprintf("turn %d", i)
		start := time.Now()
		alice.Send(b, room, text)
		alice.Wait(b, "the answer", func(evs []*event.Event) bool {
			return slices.ContainsFunc(matrixtest.Messages(evs, room, id.UserID(w.bot)), func(e *event.Event) bool {
				return e.Content.AsMessage().Body == "ok "+text
			})
		})
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "ms-p90")
}

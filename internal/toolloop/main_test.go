package toolloop

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: Run must
// wait for every tool call it starts.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

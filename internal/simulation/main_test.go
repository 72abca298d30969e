package simulation

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestMain collects garbage less often than the default (GOGC=100)
// unless GOGC says otherwise: a seed's live heap is a few MiB and
// allocates fast, so at the default a quarter of TestSim's CPU went to
// the collector; at 400 the test's heap stays under ~60 MiB.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(m.Run())
}

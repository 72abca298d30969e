package kafkaadmin

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// Without a cluster a full log dir's cordon is held as unsupported, not as a
// failed read (which KafkaDiskGuardCordonHeld alerts on).
func TestOfflineCordonsAreUnsupported(t *testing.T) {
	a := Offline("__kafka_disk_guard", slog.New(slog.DiscardHandler))
	ca, ok := a.(enforcer.CordonAdmin)
	if !ok {
		t.Fatal("the offline admin offers no cordon calls")
	}
	_, err := ca.LogDirCordons(context.Background(), 1)
	if !errors.Is(err, enforcer.ErrCordonUnsupported) {
		t.Fatalf("LogDirCordons without a cluster = %v, want ErrCordonUnsupported", err)
	}
}

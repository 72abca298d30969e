package kafkaadmin

import (
	"context"
	"errors"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// enforceOnMock returns an Enforce on a Sarama mock broker whose
// ownership topic "own" has the partitions given, and the broker.
func enforceOnMock(t *testing.T, partitions int32) (*Enforce, *sarama.MockBroker) {
	t.Helper()
	mb := sarama.NewMockBroker(t, 1)
	t.Cleanup(mb.Close)
	md := sarama.NewMockMetadataResponse(t).SetController(1).SetBroker(mb.Addr(), 1)
	for p := range partitions {
		md.SetLeader("own", p, 1)
	}
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest": md,
		"ProduceRequest":  sarama.NewMockProduceResponse(t),
	})
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_3_0_0
	cfg.ApiVersionsRequest = false
	cfg.Metadata.Retry.Max = 0
	cfg.Producer.Retry.Max = 0
	e, err := NewEnforce([]string{mb.Addr()}, cfg, "own")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, mb
}

func produced(mb *sarama.MockBroker) int {
	n := 0
	for _, rr := range mb.History() {
		if _, ok := rr.Request.(*sarama.ProduceRequest); ok {
			n++
		}
	}
	return n
}

// Spec R8.7: a record written to an ownership topic with more than one
// partition lands in partition 0, which no agent reads (they refuse the
// topic): the write is refused as the ledger lost, and nothing is sent.
func TestR8_7NoWriteToAReshapedOwnershipTopic(t *testing.T) {
	e, mb := enforceOnMock(t, 3)
	err := e.StoreRecord(context.Background(), ledger.Record{BrokerID: 1})
	if !errors.Is(err, ledger.ErrLedgerLost) {
		t.Fatalf("write to a 3-partition topic: %v, want ErrLedgerLost", err)
	}
	if n := produced(mb); n != 0 {
		t.Fatalf("%d produce request(s) sent to a 3-partition topic", n)
	}
	if err := e.StoreLift(context.Background(), ledger.Lift{BrokerID: 1}); !errors.Is(err, ledger.ErrLedgerLost) {
		t.Fatalf("lift written to a 3-partition topic: %v, want ErrLedgerLost", err)
	}

	e1, mb1 := enforceOnMock(t, 1)
	if err := e1.StoreRecord(context.Background(), ledger.Record{BrokerID: 1}); err != nil {
		t.Fatalf("write to a 1-partition topic: %v", err)
	}
	if n := produced(mb1); n != 1 {
		t.Fatalf("%d produce request(s), want 1", n)
	}
}

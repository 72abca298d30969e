package kafkaadmin

import (
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// A connection closed (a reconnect, the end of Run) while an ownership
// write is in flight keeps its producer until the write returns, then
// closes it; a write after the close is refused. Sarama's SendMessage
// panics ("send on closed channel") on a producer closed under it: the
// CI run of 93017bb crashed the enforcer's test binary that way, when
// the Link closed a connection between a write taking the producer and
// sending on it.
func TestConnKeepsItsProducerForAWriteInFlight(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	t.Cleanup(mb.Close)
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest": sarama.NewMockMetadataResponse(t).SetController(1).SetBroker(mb.Addr(), 1).SetLeader("own", 0, 1),
		"ProduceRequest":  sarama.NewMockProduceResponse(t),
	})
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_3_0_0
	cfg.ApiVersionsRequest = false
	c, err := dialSarama([]string{mb.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msg := func() *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: "own", Partition: 0, Value: sarama.StringEncoder("r")}
	}
	if err := c.sendMessage(msg()); err != nil {
		t.Fatalf("first write: %v", err)
	}
	mb.SetLatency(500 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- c.sendMessage(msg()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		n := c.sending
		c.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second write never started")
		}
		time.Sleep(time.Millisecond)
	}
	_ = c.close()
	c.mu.Lock()
	kept := c.producer != nil
	c.mu.Unlock()
	if !kept {
		t.Error("close closed the producer of a write in flight")
	}
	select {
	case <-done: // answered, ok or not: no panic
	case <-time.After(30 * time.Second):
		t.Fatal("the write in flight never returned")
	}
	c.mu.Lock()
	left := c.producer
	c.mu.Unlock()
	if left != nil {
		t.Error("the producer is still open after the last write on a closed connection returned")
	}
	if err := c.sendMessage(msg()); !errors.Is(err, ErrNotConnected) {
		t.Errorf("write on a closed connection: %v, want ErrNotConnected", err)
	}
}

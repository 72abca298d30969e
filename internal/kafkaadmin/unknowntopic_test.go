package kafkaadmin

import (
	"errors"
	"fmt"
	"testing"

	"github.com/IBM/sarama"
)

func TestUnknownTopic(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{sarama.ErrUnknownTopicOrPartition, true},
		{fmt.Errorf("wrapped: %w", sarama.ErrUnknownTopicOrPartition), true},
		{&sarama.DescribeConfigError{Err: sarama.ErrUnknownTopicOrPartition}, true},
		{&sarama.DescribeConfigError{Err: sarama.ErrTopicAuthorizationFailed}, false},
		{errors.New("timeout"), false},
		{nil, false},
	} {
		if got := unknownTopic(c.err); got != c.want {
			t.Errorf("unknownTopic(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

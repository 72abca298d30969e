package kafkaadmin

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// TopicConfigOverrides reads one config key of each topic as a topic
// override (spec R7.4): the value set on the topic itself
// (DYNAMIC_TOPIC_CONFIG), or nil when the topic inherits it (a broker
// setting or Kafka's default). A topic the cluster does not have is left
// out of the map; any other topic that cannot be described fails the
// whole call: the guard changes nothing it could not read.
func (e *Enforce) TopicConfigOverrides(ctx context.Context, topics []string, key string) (map[string]*string, error) {
	c, err := e.src.conn()
	if err != nil {
		return nil, err
	}
	out := make(map[string]*string, len(topics))
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var entries []sarama.ConfigEntry
		err := c.viaController(func() error {
			var err error
			entries, err = c.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: t, ConfigNames: []string{key}})
			return err
		})
		switch {
		case unknownTopic(err):
			continue // deleted: left out of the map
		case err != nil:
			return nil, fmt.Errorf("describe configs of topic %s: %w", t, err)
		}
		out[t] = nil
		for _, en := range entries {
			if en.Name == key && en.Source == sarama.SourceTopic {
				v := en.Value
				out[t] = &v
			}
		}
	}
	return out, nil
}

// AlterTopicConfig sets one config key on a topic (IncrementalAlterConfigs
// SET), or removes the topic's override when value is nil (DELETE: the
// topic inherits the broker's setting again). Nothing else of the topic
// changes.
func (e *Enforce) AlterTopicConfig(ctx context.Context, topic, key string, value *string) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	entry := sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}
	if value != nil {
		v := *value
		entry = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	if err := c.viaController(func() error {
		return c.admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{key: entry}, false)
	}); err != nil {
		if refused(err) {
			return fmt.Errorf("incremental alter configs of topic %s: %w: %w", topic, ledger.ErrConfigRefused, err)
		}
		return fmt.Errorf("incremental alter configs of topic %s: %w", topic, err)
	}
	return nil
}

// refused reports whether err is the broker refusing a config value
// (LogConfig's validation: INVALID_CONFIG; an AlterConfigPolicy:
// POLICY_VIOLATION; INVALID_REQUEST), not a failure to reach it.
func refused(err error) bool {
	return errors.Is(err, sarama.ErrInvalidConfig) || errors.Is(err, sarama.ErrPolicyViolation) || errors.Is(err, sarama.ErrInvalidRequest)
}

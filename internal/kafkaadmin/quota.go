package kafkaadmin

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
)

const producerByteRate = "producer_byte_rate"

var defaultClient = []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchDefault}}

// DefaultProducerQuota returns the default client-id entity's
// producer_byte_rate, 0 when none is set.
func (e *Enforce) DefaultProducerQuota(ctx context.Context) (int64, error) {
	c, err := e.src.conn()
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var entries []sarama.DescribeClientQuotasEntry
	err = c.viaController(func() error {
		var err error
		entries, err = c.admin.DescribeClientQuotas([]sarama.QuotaFilterComponent{
			{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchDefault},
		}, true)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("describe client quotas: %w", err)
	}
	for _, en := range entries {
		if v, ok := en.Values[producerByteRate]; ok {
			return int64(v), nil
		}
	}
	return 0, nil
}

// SetDefaultProducerQuota sets producer_byte_rate on the default client-id
// entity.
func (e *Enforce) SetDefaultProducerQuota(ctx context.Context, rate int64) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if rate <= 0 {
		return errors.New("set default producer quota: rate must be positive")
	}
	if err := c.viaController(func() error {
		return c.admin.AlterClientQuotas(defaultClient, sarama.ClientQuotasOp{Key: producerByteRate, Value: float64(rate)}, false)
	}); err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	return nil
}

// RemoveDefaultProducerQuota removes producer_byte_rate from the default
// client-id entity.
func (e *Enforce) RemoveDefaultProducerQuota(ctx context.Context) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.viaController(func() error {
		return c.admin.AlterClientQuotas(defaultClient, sarama.ClientQuotasOp{Key: producerByteRate, Remove: true}, false)
	}); err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	return nil
}

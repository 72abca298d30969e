package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// describeBatch is how many topics one DescribeConfigs request names.
const describeBatch = 200

// ConfigFetcher reads topic configs and broker defaults through Sarama's
// DescribeConfigs. It implements agent.ConfigFetcher. Like every adapter
// it takes the connection at each call (ErrNotConnected without one).
type ConfigFetcher struct {
	src connSource
	// brokerID is the broker whose defaults apply; -1: any broker.
	brokerID func() int32
}

// ConfigFetcher returns a fetcher over the link. brokerID tells the broker
// whose log.* defaults are read (the one the agent guards, known after
// the first scan); -1 lets it pick any.
func (l *Link) ConfigFetcher(brokerID func() int32) *ConfigFetcher {
	return &ConfigFetcher{src: l, brokerID: brokerID}
}

// NewConfigFetcher returns a fetcher over a client the caller owns
// (tests).
func NewConfigFetcher(client sarama.Client, brokerID int32) *ConfigFetcher {
	return &ConfigFetcher{src: fixed{&conn{client: client}}, brokerID: func() int32 { return brokerID }}
}

// FetchConfigs returns the effective retention configs of topics (those
// the broker does not know are left out) and the broker's defaults.
// The set's Time is when the fetch started: the configs are at least that
// fresh.
func (f *ConfigFetcher) FetchConfigs(ctx context.Context, topics []string) (agent.ConfigSet, error) {
	start := time.Now()
	c, err := f.src.conn()
	if err != nil {
		return agent.ConfigSet{}, err
	}
	defaults, err := f.brokerDefaults(ctx, c.client)
	if err != nil {
		return agent.ConfigSet{}, err
	}
	cs := agent.ConfigSet{Defaults: defaults, Topics: make(map[string]agent.TopicConfig, len(topics)), Time: start}
	for start := 0; start < len(topics); start += describeBatch {
		if err := ctx.Err(); err != nil {
			return agent.ConfigSet{}, err
		}
		batch := topics[start:min(start+describeBatch, len(topics))]
		req := &sarama.DescribeConfigsRequest{Version: 1}
		for _, t := range batch {
			req.Resources = append(req.Resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: t})
		}
		b := c.client.LeastLoadedBroker()
		if b == nil {
			return agent.ConfigSet{}, errors.New("describe topic configs: no broker available")
		}
		resp, err := describe(b, c.client.Config(), req)
		if err != nil {
			return agent.ConfigSet{}, fmt.Errorf("describe topic configs: %w", err)
		}
		for _, r := range resp.Resources {
			switch kerr := sarama.KError(r.ErrorCode); kerr {
			case sarama.ErrNoError:
			case sarama.ErrUnknownTopicOrPartition:
				continue // deleted since it was seen on disk
			default:
				return agent.ConfigSet{}, fmt.Errorf("describe configs of topic %s: %w: %s", r.Name, kerr, r.ErrorMsg)
			}
			tc, err := agent.ApplyTopicConfigs(defaults, entries(r.Configs))
			if err != nil {
				return agent.ConfigSet{}, fmt.Errorf("topic %s: %w", r.Name, err)
			}
			cs.Topics[r.Name] = tc
		}
	}
	return cs, nil
}

func describe(b *sarama.Broker, conf *sarama.Config, req *sarama.DescribeConfigsRequest) (*sarama.DescribeConfigsResponse, error) {
	if err := openBroker(b, conf); err != nil {
		return nil, err
	}
	return b.DescribeConfigs(req)
}

func entries(cs []*sarama.ConfigEntry) map[string]string {
	m := make(map[string]string, len(cs))
	for _, c := range cs {
		m[c.Name] = c.Value
	}
	return m
}

// brokerDefaults reads the broker's log.* settings: the defaults of topics
// without an override.
func (f *ConfigFetcher) brokerDefaults(ctx context.Context, client sarama.Client) (agent.TopicConfig, error) {
	if err := ctx.Err(); err != nil {
		return agent.TopicConfig{}, err
	}
	var b *sarama.Broker
	if id := f.brokerID(); id >= 0 {
		var err error
		if b, err = client.Broker(id); err != nil {
			return agent.TopicConfig{}, fmt.Errorf("broker %d: %w", id, err)
		}
	} else if bs := client.Brokers(); len(bs) > 0 {
		b = bs[0]
	}
	if b == nil {
		return agent.TopicConfig{}, errors.New("describe broker configs: no broker available")
	}
	req := &sarama.DescribeConfigsRequest{Version: 1, Resources: []*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: strconv.Itoa(int(b.ID()))}}}
	resp, err := describe(b, client.Config(), req)
	if err != nil {
		return agent.TopicConfig{}, fmt.Errorf("describe broker configs: %w", err)
	}
	if len(resp.Resources) != 1 {
		return agent.TopicConfig{}, fmt.Errorf("describe broker configs: %d resources in the answer", len(resp.Resources))
	}
	r := resp.Resources[0]
	if kerr := sarama.KError(r.ErrorCode); kerr != sarama.ErrNoError {
		return agent.TopicConfig{}, fmt.Errorf("describe broker configs: %w: %s", kerr, r.ErrorMsg)
	}
	return agent.BrokerDefaults(entries(r.Configs))
}

// ConfigFetcher is what the agent reads topic configs through.
var _ agent.ConfigFetcher = (*ConfigFetcher)(nil)

package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// FetchConfigs implements agent.ConfigFetcher: the effective retention
// configs of topics, each with its fetch time, and the broker's defaults.
// Each lookup stands alone: a topic the broker refuses or fails to
// describe, a batch whose request failed, or broker defaults that could
// not be read are recorded in the set (Errors, DefaultsErr) and the rest
// is returned. A topic the cluster does not have gets
// agent.ErrTopicUnknown. The error summarises the failed lookups (nil when
// all succeeded, unknown topics aside); without a connection it is
// ErrNotConnected and the set is empty. Fetch times are when each request
// was sent: the configs are at least that fresh; the set's Time is when
// the fetch started.
func (f *ConfigFetcher) FetchConfigs(ctx context.Context, topics []string) (agent.ConfigSet, error) {
	start := time.Now()
	cs := agent.ConfigSet{Topics: make(map[string]agent.TopicConfig, len(topics)), Fetched: make(map[string]time.Time, len(topics)),
		Errors: map[string]error{}, Time: start}
	if err := ctx.Err(); err != nil {
		return cs, err
	}
	c, err := f.src.conn()
	if err != nil {
		return agent.ConfigSet{}, err
	}
	failed := &lookupErrors{}
	base := agent.DefaultTopicConfig()
	if d, err := f.brokerDefaults(ctx, c.client); err != nil {
		cs.Defaults, cs.DefaultsErr = base, err
		failed.add("broker defaults", err)
	} else {
		cs.Defaults, cs.DefaultsFetched = d, start
		base = d
	}
	for start := 0; start < len(topics); start += describeBatch {
		if err := ctx.Err(); err != nil {
			return cs, err
		}
		batch := topics[start:min(start+describeBatch, len(topics))]
		req := &sarama.DescribeConfigsRequest{Version: 1}
		for _, t := range batch {
			req.Resources = append(req.Resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: t})
		}
		var resp *sarama.DescribeConfigsResponse
		at := time.Now()
		b := c.client.LeastLoadedBroker()
		err := errors.New("no broker available")
		if b != nil {
			resp, err = describe(b, c.client.Config(), req)
		}
		if err != nil {
			for _, t := range batch {
				cs.Errors[t] = fmt.Errorf("describe topic configs: %w", err)
				failed.add(t, cs.Errors[t])
			}
			continue
		}
		for _, r := range resp.Resources {
			if r.Type != sarama.TopicResource || !slices.Contains(batch, r.Name) {
				continue
			}
			switch kerr := sarama.KError(r.ErrorCode); kerr {
			case sarama.ErrNoError:
			case sarama.ErrUnknownTopicOrPartition:
				cs.Errors[r.Name] = agent.ErrTopicUnknown // deleted since it was seen on disk
				continue
			default:
				cs.Errors[r.Name] = fmt.Errorf("describe configs of topic %s: %w%s", r.Name, kerr, msg(&r.ErrorMsg))
				failed.add(r.Name, cs.Errors[r.Name])
				continue
			}
			tc, err := agent.ApplyTopicConfigs(base, entries(r.Configs))
			if err != nil {
				cs.Errors[r.Name] = fmt.Errorf("topic %s: %w", r.Name, err)
				failed.add(r.Name, cs.Errors[r.Name])
				continue
			}
			cs.Topics[r.Name], cs.Fetched[r.Name] = tc, at
		}
		for _, t := range batch {
			if _, ok := cs.Topics[t]; !ok && cs.Errors[t] == nil {
				cs.Errors[t] = errors.New("describe configs: no answer for the topic")
				failed.add(t, cs.Errors[t])
			}
		}
	}
	return cs, failed.err()
}

// lookupErrors summarises failed lookups: how many, and the first.
type lookupErrors struct {
	n     int
	first error
}

func (l *lookupErrors) add(what string, err error) {
	if l.n == 0 {
		l.first = fmt.Errorf("%s: %w", what, err)
	}
	l.n++
}

func (l *lookupErrors) err() error {
	switch l.n {
	case 0:
		return nil
	case 1:
		return l.first
	}
	return fmt.Errorf("%d config lookups failed, the first: %w", l.n, l.first)
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

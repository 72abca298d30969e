package kafkaadmin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// fetcherOn returns a ConfigFetcher on a Sarama mock broker that answers
// DescribeConfigs with the responses given, in turn: the broker's configs
// first, then one response per batch of topics.
func fetcherOn(t *testing.T, responses ...any) *ConfigFetcher {
	t.Helper()
	mb := sarama.NewMockBroker(t, 1)
	t.Cleanup(mb.Close)
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest":        sarama.NewMockMetadataResponse(t).SetController(1).SetBroker(mb.Addr(), 1),
		"DescribeConfigsRequest": sarama.NewMockSequence(responses...),
	})
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_3_0_0
	cfg.ApiVersionsRequest = false
	cfg.Metadata.Retry.Max = 0
	client, err := sarama.NewClient([]string{mb.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return NewConfigFetcher(client, 1)
}

func brokerConfigs(code sarama.KError, entries ...*sarama.ConfigEntry) *sarama.MockWrapper {
	return sarama.NewMockWrapper(&sarama.DescribeConfigsResponse{Version: 1, Resources: []*sarama.ResourceResponse{
		{ErrorCode: int16(code), Type: sarama.BrokerResource, Name: "1", Configs: entries},
	}})
}

func topicConfigs(rs ...*sarama.ResourceResponse) *sarama.MockWrapper {
	for _, r := range rs {
		r.Type = sarama.TopicResource
	}
	return sarama.NewMockWrapper(&sarama.DescribeConfigsResponse{Version: 1, Resources: rs})
}

// R7.2: one failing lookup does not void the others.
func TestFetchConfigsPerTopic(t *testing.T) {
	f := fetcherOn(t,
		brokerConfigs(sarama.ErrNoError, &sarama.ConfigEntry{Name: "log.retention.hours", Value: "1"}),
		topicConfigs(
			&sarama.ResourceResponse{Name: "orders", Configs: []*sarama.ConfigEntry{{Name: "retention.ms", Value: "-1"}}},
			&sarama.ResourceResponse{Name: "broken", Configs: []*sarama.ConfigEntry{{Name: "retention.ms", Value: "soon"}}},
			&sarama.ResourceResponse{Name: "gone", ErrorCode: int16(sarama.ErrUnknownTopicOrPartition)},
			&sarama.ResourceResponse{Name: "secret", ErrorCode: int16(sarama.ErrTopicAuthorizationFailed), ErrorMsg: "denied"},
			// "silent" is asked for and not answered.
		),
	)
	before := time.Now()
	cs, err := f.FetchConfigs(t.Context(), []string{"orders", "broken", "gone", "secret", "silent"})
	if err == nil || !strings.Contains(err.Error(), "3 config lookups failed") {
		t.Errorf("err = %v, want the three failed lookups summarised", err)
	}
	if cs.DefaultsErr != nil || cs.Defaults.RetentionMs != 3_600_000 || cs.DefaultsFetched.Before(before) {
		t.Errorf("defaults %+v, err %v, fetched %v", cs.Defaults, cs.DefaultsErr, cs.DefaultsFetched)
	}
	if len(cs.Topics) != 1 || cs.Topics["orders"].RetentionMs != -1 || cs.Fetched["orders"].Before(before) {
		t.Errorf("topics %+v, fetched %v", cs.Topics, cs.Fetched)
	}
	for topic, want := range map[string]string{
		"broken": "retention.ms", "gone": agent.ErrTopicUnknown.Error(), "secret": "not authorized to access this topic: denied", "silent": "no answer",
	} {
		if err := cs.Errors[topic]; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", topic, err, want)
		}
	}
	if !errors.Is(cs.Errors["secret"], sarama.ErrTopicAuthorizationFailed) || !errors.Is(cs.Errors["gone"], agent.ErrTopicUnknown) {
		t.Errorf("errors do not wrap their causes: %v", cs.Errors)
	}
	if info := cs.Info("broken"); info.Origin != agent.ConfigAssumed || info.Err == nil {
		t.Errorf("broken: %+v", info)
	}
}

// Broker defaults that cannot be read do not stop the topics' lookups.
func TestFetchConfigsWithoutBrokerDefaults(t *testing.T) {
	f := fetcherOn(t,
		brokerConfigs(sarama.ErrClusterAuthorizationFailed),
		topicConfigs(&sarama.ResourceResponse{Name: "orders", Configs: []*sarama.ConfigEntry{{Name: "retention.ms", Value: "1000"}}}),
	)
	cs, err := f.FetchConfigs(t.Context(), []string{"orders"})
	if err == nil || !strings.Contains(err.Error(), "broker defaults") {
		t.Errorf("err = %v", err)
	}
	if !errors.Is(cs.DefaultsErr, sarama.ErrClusterAuthorizationFailed) || !cs.DefaultsFetched.IsZero() || cs.Defaults != agent.DefaultTopicConfig() {
		t.Errorf("defaults %+v, err %v", cs.Defaults, cs.DefaultsErr)
	}
	if cs.Topics["orders"].RetentionMs != 1000 || cs.Info("orders").Origin != agent.ConfigFromCluster {
		t.Errorf("orders: %+v", cs.Info("orders"))
	}
}

package kafkaadmin

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// CordonedLogDirs is the broker config naming its cordoned log dirs
// (KIP-1066, Kafka 4.3+); "*" cordons them all.
const CordonedLogDirs = "cordoned.log.dirs"

var _ enforcer.CordonAdmin = (*Enforce)(nil)

// LogDirCordons reads node's log.dirs and cordoned.log.dirs (with their
// synonyms: the broker's own dynamic value apart from the static and the
// cluster-wide default ones) and the cluster's finalized metadata.version
// (ApiVersions v3, from the same broker).
func (e *Enforce) LogDirCordons(ctx context.Context, node int32) (enforcer.BrokerCordons, error) {
	var out enforcer.BrokerCordons
	c, err := e.src.conn()
	if err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	b, err := c.client.Broker(node)
	if err != nil {
		if rerr := c.client.RefreshMetadata(); rerr == nil {
			b, err = c.client.Broker(node)
		}
		if err != nil {
			return out, fmt.Errorf("broker %d: %w", node, err)
		}
	}
	conf := c.client.Config()
	if err := openBroker(b, conf); err != nil {
		return out, fmt.Errorf("connect to broker %d: %w", node, err)
	}
	av, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "kafka-disk-guard", ClientSoftwareVersion: "1"})
	if err != nil {
		return out, fmt.Errorf("api versions of broker %d: %w", node, err)
	}
	if av.ErrorCode != 0 {
		return out, fmt.Errorf("api versions of broker %d: %w", node, kerr(sarama.KError(av.ErrorCode)))
	}
	if av.FinalizedFeaturesEpoch >= 0 {
		for _, f := range av.FinalizedFeatures {
			if f.Name == "metadata.version" {
				out.MetadataVersion = f.MaxVersionLevel
			}
		}
	}
	resp, err := describe(b, conf, &sarama.DescribeConfigsRequest{Version: 1, IncludeSynonyms: true,
		Resources: []*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: strconv.Itoa(int(node)),
			ConfigNames: []string{"log.dirs", "log.dir", CordonedLogDirs}}}})
	if err != nil {
		return out, fmt.Errorf("describe configs of broker %d: %w", node, err)
	}
	if len(resp.Resources) != 1 {
		return out, fmt.Errorf("describe configs of broker %d: %d resources in the answer", node, len(resp.Resources))
	}
	r := resp.Resources[0]
	if r.ErrorCode != 0 {
		return out, fmt.Errorf("describe configs of broker %d: %w: %s", node, kerr(sarama.KError(r.ErrorCode)), r.ErrorMsg)
	}
	var dirs, dir string
	for _, en := range r.Configs {
		switch en.Name {
		case "log.dirs":
			dirs = en.Value
		case "log.dir":
			dir = en.Value
		case CordonedLogDirs:
			for _, s := range en.Synonyms {
				switch s.Source {
				case sarama.SourceDynamicBroker:
					out.Dynamic = append(out.Dynamic, splitList(s.ConfigValue)...)
				case sarama.SourceDynamicDefaultBroker, sarama.SourceStaticBroker:
					if len(out.Inherited) == 0 { // synonyms come in precedence order
						out.Inherited = splitList(s.ConfigValue)
					}
				}
			}
		}
	}
	if dirs == "" {
		dirs = dir
	}
	out.LogDirs = splitList(dirs)
	return out, nil
}

// splitList splits a Kafka list config value (comma separated, spaces
// around entries ignored).
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// CordonLogDir appends dir to node's dynamic cordoned.log.dirs
// (IncrementalAlterConfigs APPEND; an entry already there is not
// repeated). An INVALID_CONFIG for a metadata.version under 4.3-IV0 is
// ErrCordonUnsupported; any other refusal is ErrConfigRefused.
func (e *Enforce) CordonLogDir(ctx context.Context, node int32, dir string) error {
	return e.alterCordon(ctx, node, dir, sarama.IncrementalAlterConfigsOperationAppend)
}

// UncordonLogDir subtracts dir from node's dynamic cordoned.log.dirs
// (IncrementalAlterConfigs SUBTRACT): the operator's entries stay.
func (e *Enforce) UncordonLogDir(ctx context.Context, node int32, dir string) error {
	return e.alterCordon(ctx, node, dir, sarama.IncrementalAlterConfigsOperationSubtract)
}

func (e *Enforce) alterCordon(ctx context.Context, node int32, dir string, op sarama.IncrementalAlterConfigsOperation) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	what := "cordon"
	if op == sarama.IncrementalAlterConfigsOperationSubtract {
		what = "uncordon"
	}
	v := dir
	err = c.admin.IncrementalAlterConfig(sarama.BrokerResource, strconv.Itoa(int(node)),
		map[string]sarama.IncrementalAlterConfigsEntry{CordonedLogDirs: {Operation: op, Value: &v}}, false)
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "metadata.version"):
		return fmt.Errorf("%s log dir %s of broker %d: %w: %w", what, dir, node, enforcer.ErrCordonUnsupported, err)
	case refused(err):
		return fmt.Errorf("%s log dir %s of broker %d: %w: %w", what, dir, node, enforcer.ErrConfigRefused, err)
	}
	return fmt.Errorf("%s log dir %s of broker %d: %w", what, dir, node, err)
}

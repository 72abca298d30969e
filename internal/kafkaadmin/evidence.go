package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// The enforcer reads its evidence through Evidence.
var _ enforcer.Evidence = (*Evidence)(nil)

// Evidence reads what the guard must know about the cluster before a
// destructive action (spec R7): the connected cluster's id and the log
// dirs a node reports (R7.1, here), and the rights of the guard's
// principal (Rights, rights.go). It works over the Link (Link.Evidence),
// or over a sarama.Client that stays the caller's to close (NewEvidence).
// Every per-item error code is checked.
//
// Consumers declare what they use, e.g.
//
//	type IdentitySource interface {
//		ClusterID(ctx context.Context) (string, error)
//		BrokerLogDirs(ctx context.Context, node int32) ([]agent.BrokerLogDir, error)
//	}
type Evidence struct {
	api brokerAPI
}

// Evidence returns the evidence reader over the link (ErrNotConnected
// without a connection).
func (l *Link) Evidence() *Evidence { return &Evidence{api: clientAPI{l}} }

// NewEvidence returns the evidence reader over a client the caller owns.
func NewEvidence(client sarama.Client) *Evidence {
	return &Evidence{api: clientAPI{fixed{&conn{client: client}}}}
}

// brokerAPI is the requests Evidence sends, each to one broker: a seam so
// the unit tests answer with plain response values.
type brokerAPI interface {
	// ready fails when there is no connection (ErrNotConnected).
	ready() error
	version() sarama.KafkaVersion
	// describeCluster asks any broker.
	describeCluster(req *sarama.DescribeClusterRequest) (*sarama.DescribeClusterResponse, error)
	metadata(req *sarama.MetadataRequest) (*sarama.MetadataResponse, error)
	// describeLogDirs asks the broker node.
	describeLogDirs(node int32, req *sarama.DescribeLogDirsRequest) (*sarama.DescribeLogDirsResponse, error)
	describeConfigs(req *sarama.DescribeConfigsRequest) (*sarama.DescribeConfigsResponse, error)
	describeAcls(req *sarama.DescribeAclsRequest) (*sarama.DescribeAclsResponse, error)
	deleteAcls(req *sarama.DeleteAclsRequest) (*sarama.DeleteAclsResponse, error)
	alterClientQuotas(req *sarama.AlterClientQuotasRequest) (*sarama.AlterClientQuotasResponse, error)
	createTopics(req *sarama.CreateTopicsRequest) (*sarama.CreateTopicsResponse, error)
}

// clientAPI sends each request over the connection of the moment.
type clientAPI struct{ src connSource }

func (c clientAPI) ready() error {
	_, err := c.src.conn()
	return err
}

// version is the protocol version the client speaks (0 without a
// connection: every request then fails with ErrNotConnected).
func (c clientAPI) version() sarama.KafkaVersion {
	cn, err := c.src.conn()
	if err != nil {
		return sarama.KafkaVersion{}
	}
	return cn.client.Config().Version
}

// any returns a connected broker of the cluster.
func (c clientAPI) any() (*sarama.Broker, error) {
	cn, err := c.src.conn()
	if err != nil {
		return nil, err
	}
	b := cn.client.LeastLoadedBroker()
	if b == nil {
		return nil, errors.New("no broker available")
	}
	if err := openBroker(b, cn.client.Config()); err != nil {
		return nil, fmt.Errorf("connect to broker %d: %w", b.ID(), err)
	}
	return b, nil
}

func (c clientAPI) describeCluster(req *sarama.DescribeClusterRequest) (*sarama.DescribeClusterResponse, error) {
	b, err := c.any()
	if err != nil {
		return nil, err
	}
	return b.DescribeCluster(req)
}

func (c clientAPI) metadata(req *sarama.MetadataRequest) (*sarama.MetadataResponse, error) {
	b, err := c.any()
	if err != nil {
		return nil, err
	}
	return b.GetMetadata(req)
}

func (c clientAPI) describeLogDirs(node int32, req *sarama.DescribeLogDirsRequest) (*sarama.DescribeLogDirsResponse, error) {
	cn, err := c.src.conn()
	if err != nil {
		return nil, err
	}
	b, err := cn.client.Broker(node)
	if err != nil {
		if rerr := cn.client.RefreshMetadata(); rerr == nil {
			b, err = cn.client.Broker(node)
		}
		if err != nil {
			return nil, fmt.Errorf("broker %d: %w", node, err)
		}
	}
	if err := openBroker(b, cn.client.Config()); err != nil {
		return nil, fmt.Errorf("connect to broker %d: %w", node, err)
	}
	return b.DescribeLogDirs(req)
}

func (c clientAPI) describeConfigs(req *sarama.DescribeConfigsRequest) (*sarama.DescribeConfigsResponse, error) {
	b, err := c.any()
	if err != nil {
		return nil, err
	}
	return b.DescribeConfigs(req)
}

func (c clientAPI) describeAcls(req *sarama.DescribeAclsRequest) (*sarama.DescribeAclsResponse, error) {
	b, err := c.any()
	if err != nil {
		return nil, err
	}
	return b.DescribeAcls(req)
}

func (c clientAPI) deleteAcls(req *sarama.DeleteAclsRequest) (*sarama.DeleteAclsResponse, error) {
	b, err := c.any()
	if err != nil {
		return nil, err
	}
	return b.DeleteAcls(req)
}

func (c clientAPI) alterClientQuotas(req *sarama.AlterClientQuotasRequest) (*sarama.AlterClientQuotasResponse, error) {
	b, err := c.any()
	if err != nil {
		return nil, err
	}
	return b.AlterClientQuotas(req)
}

func (c clientAPI) createTopics(req *sarama.CreateTopicsRequest) (*sarama.CreateTopicsResponse, error) {
	cn, err := c.src.conn()
	if err != nil {
		return nil, err
	}
	b, err := cn.client.Controller()
	if err != nil {
		if b, err = c.any(); err != nil {
			return nil, err
		}
	}
	if err := openBroker(b, cn.client.Config()); err != nil {
		return nil, fmt.Errorf("connect to broker %d: %w", b.ID(), err)
	}
	return b.CreateTopics(req)
}

// describeCluster sends DescribeCluster (Kafka 2.8+), asking for the
// principal's cluster operations when ops is set.
func (e *Evidence) describeCluster(ops bool) (*sarama.DescribeClusterResponse, error) {
	req := sarama.NewDescribeClusterRequest(e.api.version())
	req.IncludeClusterAuthorizedOperations = ops
	rsp, err := e.api.describeCluster(req)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	if !errors.Is(rsp.Err, sarama.ErrNoError) {
		return nil, fmt.Errorf("describe cluster: %w%s", rsp.Err, msg(rsp.ErrorMessage))
	}
	return rsp, nil
}

// ClusterID returns the id of the cluster the client is connected to
// (DescribeCluster; the metadata's cluster id before Kafka 2.8). It is the
// cluster.id every broker's meta.properties names.
func (e *Evidence) ClusterID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := e.api.ready(); err != nil {
		return "", err
	}
	if e.api.version().IsAtLeast(sarama.V2_8_0_0) {
		rsp, err := e.describeCluster(false)
		if err == nil && rsp.ClusterID != "" {
			return rsp.ClusterID, nil
		}
		if err != nil && !errors.Is(err, sarama.ErrUnsupportedVersion) {
			return "", err
		}
	}
	md, err := e.api.metadata(&sarama.MetadataRequest{Version: 2})
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	if md.ClusterID == nil || *md.ClusterID == "" {
		return "", errors.New("metadata: the broker gives no cluster id")
	}
	return *md.ClusterID, nil
}

// BrokerLogDirs returns the log dirs node reports (DescribeLogDirs sent
// to that node): each with its per-dir error (an offline dir has
// KAFKA_STORAGE_ERROR), filesystem size and the partitions in it. A
// request-level error (CLUSTER_AUTHORIZATION_FAILED without
// Cluster:DESCRIBE, from Kafka 3.2) is returned as an error; older brokers
// answer an unauthorized request with no log dirs at all, which no log
// dir can be confirmed by.
func (e *Evidence) BrokerLogDirs(ctx context.Context, node int32) ([]agent.BrokerLogDir, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := e.api.ready(); err != nil {
		return nil, err
	}
	req := &sarama.DescribeLogDirsRequest{}
	switch v := e.api.version(); {
	case v.IsAtLeast(sarama.V3_3_0_0):
		req.Version = 4 // total and usable bytes (KIP-827)
	case v.IsAtLeast(sarama.V3_2_0_0):
		req.Version = 3
	case v.IsAtLeast(sarama.V2_6_0_0):
		req.Version = 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		req.Version = 1
	}
	rsp, err := e.api.describeLogDirs(node, req)
	if err != nil {
		return nil, fmt.Errorf("describe log dirs of broker %d: %w", node, err)
	}
	if !errors.Is(rsp.ErrorCode, sarama.ErrNoError) {
		return nil, fmt.Errorf("describe log dirs of broker %d: %w", node, rsp.ErrorCode)
	}
	out := make([]agent.BrokerLogDir, 0, len(rsp.LogDirs))
	for _, d := range rsp.LogDirs {
		ld := agent.BrokerLogDir{Path: d.Path, TotalBytes: -1, UsableBytes: -1}
		if req.Version >= 4 {
			ld.TotalBytes, ld.UsableBytes = d.TotalBytes, d.UsableBytes
		}
		if !errors.Is(d.ErrorCode, sarama.ErrNoError) {
			ld.Err = d.ErrorCode
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				tp := agent.TopicPartition{Topic: t.Topic, Partition: p.PartitionID}
				if p.IsTemporary {
					ld.Future = append(ld.Future, tp)
				} else {
					ld.Partitions = append(ld.Partitions, tp)
				}
			}
		}
		out = append(out, ld)
	}
	return out, nil
}

// IdentityEvidence is ClusterID and BrokerLogDirs of node together, for
// agent.CheckIdentity.
func (e *Evidence) IdentityEvidence(ctx context.Context, node int32) (agent.IdentityEvidence, error) {
	id, err := e.ClusterID(ctx)
	if err != nil {
		return agent.IdentityEvidence{}, err
	}
	dirs, err := e.BrokerLogDirs(ctx, node)
	if err != nil {
		return agent.IdentityEvidence{}, err
	}
	return agent.IdentityEvidence{ClusterID: id, NodeID: node, LogDirs: dirs}, nil
}

// TopicNames lists the topics of the cluster the principal may describe
// (Metadata of every topic), sorted.
func (e *Evidence) TopicNames(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := e.api.ready(); err != nil {
		return nil, err
	}
	req := sarama.NewMetadataRequest(e.api.version(), nil)
	req.AllowAutoTopicCreation = false
	rsp, err := e.api.metadata(req)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	var out []string
	for _, t := range rsp.Topics {
		if errors.Is(t.Err, sarama.ErrNoError) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

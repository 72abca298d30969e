package kafkaadmin

import (
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// fakeBrokers answers Evidence's requests from fixed data, as a broker
// would for one principal.
type fakeBrokers struct {
	ver        sarama.KafkaVersion
	clusterID  string
	clusterOps int32 // authorized operations DescribeCluster reports
	clusterErr error
	// Per-topic answers of Metadata: error code and operations.
	topics map[string]*sarama.TopicMetadata
	// Per-node answers of DescribeLogDirs.
	logDirs map[int32]*sarama.DescribeLogDirsResponse
	// Probe answers.
	describeAclsErr, deleteAclsErr, configsErr, quotasErr sarama.KError
	createErr                                             map[string]sarama.KError

	// What was asked, to check the probes change nothing.
	quotaReqs  []*sarama.AlterClientQuotasRequest
	createReqs []*sarama.CreateTopicsRequest
	mdReqs     []*sarama.MetadataRequest
}

func (f *fakeBrokers) ready() error { return nil }

func (f *fakeBrokers) version() sarama.KafkaVersion { return f.ver }

func (f *fakeBrokers) describeCluster(req *sarama.DescribeClusterRequest) (*sarama.DescribeClusterResponse, error) {
	if f.clusterErr != nil {
		return nil, f.clusterErr
	}
	rsp := &sarama.DescribeClusterResponse{ClusterID: f.clusterID, ClusterAuthorizedOperations: math.MinInt32}
	if req.IncludeClusterAuthorizedOperations {
		rsp.ClusterAuthorizedOperations = f.clusterOps
	}
	return rsp, nil
}

func (f *fakeBrokers) metadata(req *sarama.MetadataRequest) (*sarama.MetadataResponse, error) {
	f.mdReqs = append(f.mdReqs, req)
	id := f.clusterID
	rsp := &sarama.MetadataResponse{ClusterID: &id}
	for _, t := range req.Topics {
		if tm, ok := f.topics[t]; ok {
			rsp.Topics = append(rsp.Topics, tm)
		} else {
			rsp.Topics = append(rsp.Topics, &sarama.TopicMetadata{Name: t, Err: sarama.ErrUnknownTopicOrPartition, TopicAuthorizedOperations: bits(sarama.AclOperationCreate)})
		}
	}
	return rsp, nil
}

func (f *fakeBrokers) describeLogDirs(node int32, req *sarama.DescribeLogDirsRequest) (*sarama.DescribeLogDirsResponse, error) {
	rsp, ok := f.logDirs[node]
	if !ok {
		return nil, errors.New("no such broker")
	}
	return rsp, nil
}

func (f *fakeBrokers) describeConfigs(req *sarama.DescribeConfigsRequest) (*sarama.DescribeConfigsResponse, error) {
	return &sarama.DescribeConfigsResponse{Resources: []*sarama.ResourceResponse{{ErrorCode: int16(f.configsErr), Type: sarama.BrokerResource}}}, nil
}

func (f *fakeBrokers) describeAcls(req *sarama.DescribeAclsRequest) (*sarama.DescribeAclsResponse, error) {
	return &sarama.DescribeAclsResponse{Err: f.describeAclsErr}, nil
}

func (f *fakeBrokers) deleteAcls(req *sarama.DeleteAclsRequest) (*sarama.DeleteAclsResponse, error) {
	return &sarama.DeleteAclsResponse{FilterResponses: []*sarama.FilterResponse{{Err: f.deleteAclsErr}}}, nil
}

func (f *fakeBrokers) alterClientQuotas(req *sarama.AlterClientQuotasRequest) (*sarama.AlterClientQuotasResponse, error) {
	f.quotaReqs = append(f.quotaReqs, req)
	return &sarama.AlterClientQuotasResponse{Entries: []sarama.AlterClientQuotasEntryResponse{{ErrorCode: f.quotasErr}}}, nil
}

func (f *fakeBrokers) createTopics(req *sarama.CreateTopicsRequest) (*sarama.CreateTopicsResponse, error) {
	f.createReqs = append(f.createReqs, req)
	rsp := &sarama.CreateTopicsResponse{TopicErrors: map[string]*sarama.TopicError{}}
	for t := range req.TopicDetails {
		rsp.TopicErrors[t] = &sarama.TopicError{Err: f.createErr[t]}
	}
	return rsp, nil
}

func bits(ops ...sarama.AclOperation) int32 {
	var b int32
	for _, o := range ops {
		b |= 1 << uint(o)
	}
	return b
}

var allTopicOps = bits(sarama.AclOperationRead, sarama.AclOperationWrite, sarama.AclOperationCreate, sarama.AclOperationDelete,
	sarama.AclOperationAlter, sarama.AclOperationDescribe, sarama.AclOperationDescribeConfigs, sarama.AclOperationAlterConfigs)

var allClusterOps = bits(sarama.AclOperationCreate, sarama.AclOperationAlter, sarama.AclOperationDescribe, sarama.AclOperationClusterAction,
	sarama.AclOperationDescribeConfigs, sarama.AclOperationAlterConfigs, sarama.AclOperationIdempotentWrite)

func superUser() *fakeBrokers {
	return &fakeBrokers{
		ver: sarama.V3_3_0_0, clusterID: "prod", clusterOps: allClusterOps,
		topics: map[string]*sarama.TopicMetadata{
			"orders": {Name: "orders", TopicAuthorizedOperations: allTopicOps},
			"clicks": {Name: "clicks", TopicAuthorizedOperations: allTopicOps},
			"own":    {Name: "own", TopicAuthorizedOperations: allTopicOps},
		},
	}
}

func TestClusterID(t *testing.T) {
	f := superUser()
	e := &Evidence{api: f}
	if id, err := e.ClusterID(t.Context()); err != nil || id != "prod" {
		t.Errorf("ClusterID = %q, %v", id, err)
	}
	f.ver = sarama.V2_6_0_0 // no DescribeCluster: metadata's cluster id
	if id, err := e.ClusterID(t.Context()); err != nil || id != "prod" || f.mdReqs[0].Version != 2 {
		t.Errorf("ClusterID from metadata = %q, %v", id, err)
	}
	f.ver, f.clusterErr = sarama.V3_3_0_0, errors.New("eof")
	if _, err := e.ClusterID(t.Context()); err == nil || !strings.Contains(err.Error(), "describe cluster: eof") {
		t.Errorf("error: %v", err)
	}
}

func TestBrokerLogDirs(t *testing.T) {
	f := superUser()
	f.logDirs = map[int32]*sarama.DescribeLogDirsResponse{
		1: {LogDirs: []sarama.DescribeLogDirsResponseDirMetadata{
			{Path: "/k/0", TotalBytes: 1000, UsableBytes: 600, Topics: []sarama.DescribeLogDirsResponseTopic{{Topic: "orders",
				Partitions: []sarama.DescribeLogDirsResponsePartition{{PartitionID: 0, Size: 10}, {PartitionID: 1, Size: 9, IsTemporary: true}}}}},
			{Path: "/k/1", ErrorCode: sarama.ErrKafkaStorageError},
		}},
		2: {ErrorCode: sarama.ErrClusterAuthorizationFailed},
	}
	e := &Evidence{api: f}
	dirs, err := e.BrokerLogDirs(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want0 := agent.BrokerLogDir{Path: "/k/0", TotalBytes: 1000, UsableBytes: 600,
		Partitions: []agent.TopicPartition{{Topic: "orders", Partition: 0}}, Future: []agent.TopicPartition{{Topic: "orders", Partition: 1}}}
	if len(dirs) != 2 || dirs[0].Path != want0.Path || dirs[0].TotalBytes != 1000 || dirs[0].UsableBytes != 600 || dirs[0].Err != nil ||
		!slices.Equal(dirs[0].Partitions, want0.Partitions) || !slices.Equal(dirs[0].Future, want0.Future) {
		t.Fatalf("dirs %+v", dirs)
	}
	if !errors.Is(dirs[1].Err, sarama.ErrKafkaStorageError) {
		t.Errorf("offline dir: %+v", dirs[1])
	}
	if _, err := e.BrokerLogDirs(t.Context(), 2); !errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		t.Errorf("refused: %v", err)
	}
	if _, err := e.BrokerLogDirs(t.Context(), 9); err == nil {
		t.Error("unknown broker: no error")
	}
	f.ver = sarama.V2_8_0_0 // DescribeLogDirs v2: no sizes
	dirs, _ = e.BrokerLogDirs(t.Context(), 1)
	if dirs[0].TotalBytes != -1 || dirs[0].UsableBytes != -1 {
		t.Errorf("sizes before v4: %+v", dirs[0])
	}
	ev, err := e.IdentityEvidence(t.Context(), 1)
	if err != nil || ev.ClusterID != "prod" || ev.NodeID != 1 || len(ev.LogDirs) != 2 {
		t.Errorf("IdentityEvidence = %+v, %v", ev, err)
	}
}

func gaps(r rights.Report) []string {
	var out []string
	for _, g := range r.Gaps {
		s := string(g.Feature) + " " + string(g.Scope) + ":" + string(g.Operation)
		if len(g.Topics) > 0 {
			s += " " + strings.Join(g.Topics, ",")
		}
		if g.Unknown {
			s += " ?"
		}
		out = append(out, s)
	}
	return out
}

func TestRights(t *testing.T) {
	all := rights.Features()
	q := rights.Query{Features: all, Topics: []string{"orders", "clicks"}, OwnershipTopic: "own"}
	tests := []struct {
		name  string
		spoil func(*fakeBrokers)
		q     rights.Query
		want  []string
	}{
		{"super user", func(*fakeBrokers) {}, q, nil},
		{"cluster operations reported: ALTER missing", func(f *fakeBrokers) {
			f.clusterOps &^= bits(sarama.AclOperationAlter)
		}, q, []string{"protect_acl cluster:ALTER", "move cluster:ALTER", "reassign cluster:ALTER"}},
		{"no Cluster:DESCRIBE: probes decide", func(f *fakeBrokers) {
			f.clusterOps = 0
			f.describeAclsErr = sarama.ErrClusterAuthorizationFailed
			f.quotasErr = sarama.ErrClusterAuthorizationFailed
		}, q, []string{"observe cluster:DESCRIBE", "protect_acl cluster:DESCRIBE", "protect_quota cluster:ALTER_CONFIGS", "cordon cluster:ALTER_CONFIGS",
			"move cluster:DESCRIBE", "move cluster:ALTER_CONFIGS", "reassign cluster:DESCRIBE", "reassign cluster:ALTER_CONFIGS", "admission cluster:DESCRIBE"}},
		{"probe answers something else: unknown", func(f *fakeBrokers) {
			f.clusterOps = 0
			f.configsErr = sarama.ErrRequestTimedOut
		}, rights.Query{Features: []rights.Feature{rights.Observe}, Topics: []string{"orders"}}, []string{"observe cluster:DESCRIBE_CONFIGS ?"}},
		{"topic without DELETE, topic not describable", func(f *fakeBrokers) {
			f.topics["orders"].TopicAuthorizedOperations &^= bits(sarama.AclOperationDelete)
			f.topics["clicks"] = &sarama.TopicMetadata{Name: "clicks", Err: sarama.ErrTopicAuthorizationFailed, TopicAuthorizedOperations: math.MinInt32}
		}, rights.Query{Features: []rights.Feature{rights.DeleteRecords}, Topics: []string{"orders", "clicks"}}, []string{
			"observe topics:DESCRIBE clicks", "observe topics:DESCRIBE_CONFIGS clicks ?",
			"delete_records topics:DESCRIBE clicks", "delete_records topics:DELETE orders", "delete_records topics:DELETE clicks ?"}},
		{"ownership topic absent, no Cluster:CREATE, topic CREATE refused", func(f *fakeBrokers) {
			delete(f.topics, "own")
			f.clusterOps &^= bits(sarama.AclOperationCreate)
			f.createErr = map[string]sarama.KError{"own": sarama.ErrTopicAuthorizationFailed}
		}, rights.Query{Features: []rights.Feature{rights.ProtectACL}, OwnershipTopic: "own"}, []string{
			"protect_acl ownership:CREATE", "protect_acl ownership:DESCRIBE", "protect_acl ownership:READ", "protect_acl ownership:WRITE"}},
		{"ownership topic absent, creatable by topic ACL", func(f *fakeBrokers) {
			f.topics["own"] = &sarama.TopicMetadata{Name: "own", Err: sarama.ErrUnknownTopicOrPartition, TopicAuthorizedOperations: allTopicOps}
			f.clusterOps &^= bits(sarama.AclOperationCreate)
			f.createErr = map[string]sarama.KError{"own": sarama.ErrPolicyViolation}
		}, rights.Query{Features: []rights.Feature{rights.ProtectQuota}, OwnershipTopic: "own"}, nil},
		{"no authorizer", func(f *fakeBrokers) { f.describeAclsErr = sarama.ErrSecurityDisabled },
			rights.Query{Features: []rights.Feature{rights.ProtectACL}, OwnershipTopic: "own"}, []string{"protect_acl cluster:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := superUser()
			tt.spoil(f)
			r, err := (&Evidence{api: f}).Rights(t.Context(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := gaps(r); !slices.Equal(got, tt.want) {
				t.Errorf("gaps\n got  %q\n want %q\n%s", got, tt.want, r)
			}
			for _, req := range f.quotaReqs {
				if !req.ValidateOnly {
					t.Error("AlterClientQuotas probe without validateOnly")
				}
			}
			for _, req := range f.createReqs {
				if !req.ValidateOnly {
					t.Error("CreateTopics probe without validateOnly")
				}
			}
			for _, req := range f.mdReqs {
				if req.AllowAutoTopicCreation || !req.IncludeTopicAuthorizedOperations {
					t.Errorf("metadata request %+v", req)
				}
			}
		})
	}
	// No broker answers: an error, not a report.
	f := superUser()
	f.clusterErr = errors.New("connection refused")
	if _, err := (&Evidence{api: f}).Rights(t.Context(), q); err == nil {
		t.Error("unreachable cluster: no error")
	}
}

// Over a Link that is not connected every call says so.
func TestEvidenceNotConnected(t *testing.T) {
	e := NewLink(Config{BootstrapServers: []string{"127.0.0.1:1"}}, slog.New(slog.DiscardHandler), LinkOptions{}).Evidence()
	if _, err := e.ClusterID(t.Context()); !errors.Is(err, ErrNotConnected) {
		t.Errorf("ClusterID: %v", err)
	}
	if _, err := e.BrokerLogDirs(t.Context(), 1); !errors.Is(err, ErrNotConnected) {
		t.Errorf("BrokerLogDirs: %v", err)
	}
	if _, err := e.Rights(t.Context(), rights.Query{Features: rights.Features(), Topics: []string{"a"}, OwnershipTopic: "own"}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Rights: %v", err)
	}
}

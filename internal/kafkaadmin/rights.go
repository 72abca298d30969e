package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// How Rights learns what the guard's principal may do. The broker's
// authorizer answers for the principal as it connects (its host, its
// groups, super.users, allow.everyone.if.no.acl.found, DENY over ALLOW),
// so nothing is re-implemented here and no principal name is needed (an
// mTLS principal is a DN the client does not know):
//
//   - cluster operations: DescribeCluster with the principal's authorized
//     operations (KIP-430). The broker reports them only to a principal
//     holding Cluster:DESCRIBE; without it, each operation is tried with a
//     request that changes nothing: DescribeAcls of a filter matching
//     nothing (DESCRIBE), DescribeConfigs of a broker (DESCRIBE_CONFIGS),
//     DeleteAcls of a fully specified binding nobody has (ALTER),
//     AlterClientQuotas with validateOnly (ALTER_CONFIGS); CREATE is then
//     left undetermined;
//   - topic operations: Metadata with topic authorized operations, for the
//     topics asked and the ownership topic (Kafka answers them for a topic
//     that does not exist too, when DESCRIBE on its name is allowed);
//   - creating the ownership topic while it does not exist: CreateTopics
//     with validateOnly;
//   - with ACL protection, DescribeAcls also tells a cluster without an
//     authorizer (SECURITY_DISABLED), where ACLs cannot protect.
//
// DescribeAcls filtered on the guard's own principal would show neither
// super.users nor allow.everyone.if.no.acl.found, and needs the principal's
// name: it is not used.

// The binding the probes name: a literal DENY of a principal and host
// nobody uses, on a topic name nobody uses. DescribeAcls and DeleteAcls
// of it match nothing.
const (
	probeTopic     = "__kafka_disk_guard_rights_probe"
	probePrincipal = "User:kafka-disk-guard-rights-probe"
	probeHost      = "rights-probe.invalid"
	probeClientID  = "kafka-disk-guard-rights-probe"
)

// metadataBatch is how many topics one Metadata request names.
const metadataBatch = 1000

var saramaOps = map[rights.Operation]sarama.AclOperation{
	rights.Read: sarama.AclOperationRead, rights.Write: sarama.AclOperationWrite,
	rights.Create: sarama.AclOperationCreate, rights.Delete: sarama.AclOperationDelete,
	rights.Alter: sarama.AclOperationAlter, rights.Describe: sarama.AclOperationDescribe,
	rights.DescribeConfigs: sarama.AclOperationDescribeConfigs, rights.AlterConfigs: sarama.AclOperationAlterConfigs,
}

// decodeOps turns an authorized-operations bit field (bit n set: the
// AclOperation of code n is allowed) into Ops for the operations given.
func decodeOps(bits int32, ops ...rights.Operation) rights.Ops {
	out := make(rights.Ops, len(ops))
	for _, op := range ops {
		out[op] = bits&(1<<uint(saramaOps[op])) != 0
	}
	return out
}

// reported: the broker filled in authorized operations (it sends
// math.MinInt32 when not asked or not supported, 0 when it may not say).
func reported(bits int32) bool { return bits != math.MinInt32 && bits > 0 }

// Rights checks which rights of the query's features the guard's
// principal holds and returns the report of what is missing. An error is
// returned only when nothing could be learned (no broker answered);
// rights that could not be determined are gaps marked Unknown.
func (e *Evidence) Rights(ctx context.Context, q rights.Query) (rights.Report, error) {
	features := q.Features
	if !slices.Contains(features, rights.Observe) {
		features = append([]rights.Feature{rights.Observe}, features...)
	}
	var clusterOps, topicOps []rights.Operation
	ownership := false
	for _, n := range rights.Needs(features...) {
		switch n.Scope {
		case rights.ScopeCluster:
			if !slices.Contains(clusterOps, n.Operation) {
				clusterOps = append(clusterOps, n.Operation)
			}
		case rights.ScopeOwnership:
			ownership = true
		}
	}
	topicOps = []rights.Operation{rights.Read, rights.Write, rights.Create, rights.Delete, rights.Alter,
		rights.Describe, rights.DescribeConfigs, rights.AlterConfigs}
	if ownership && !slices.Contains(clusterOps, rights.Create) {
		clusterOps = append(clusterOps, rights.Create) // Cluster:CREATE also creates the ownership topic
	}
	h := rights.Held{OwnershipTopic: q.OwnershipTopic, Topics: map[string]rights.TopicHeld{}}
	if err := ctx.Err(); err != nil {
		return rights.Report{}, err
	}
	if err := e.api.ready(); err != nil {
		return rights.Report{}, err
	}
	var err error
	h.Cluster, h.ClusterErr, err = e.clusterOps(clusterOps)
	if err != nil {
		return rights.Report{}, err
	}
	if slices.Contains(features, rights.ProtectACL) {
		if noAuthz, err := e.noAuthorizer(); err == nil && noAuthz {
			h.NoAuthorizer = true
		}
	}

	names := slices.Clone(q.Topics)
	if ownership && q.OwnershipTopic != "" {
		names = append(names, q.OwnershipTopic)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for start := 0; start < len(names); start += metadataBatch {
		if err := ctx.Err(); err != nil {
			return rights.Report{}, err
		}
		batch := names[start:min(start+metadataBatch, len(names))]
		got := e.topicOps(batch, topicOps)
		for _, t := range q.Topics {
			if th, ok := got[t]; ok {
				h.Topics[t] = th
			}
		}
		if th, ok := got[q.OwnershipTopic]; ok && ownership {
			h.Ownership = th
		}
	}
	if ownership && !h.Ownership.Exists && !h.Cluster[rights.Create] {
		if h.Ownership.Ops == nil {
			h.Ownership.Ops = rights.Ops{}
		}
		created, exists, err := e.canCreate(q.OwnershipTopic)
		switch {
		case err != nil:
			delete(h.Ownership.Ops, rights.Create)
			h.Ownership.Err = joinWhy(slices.DeleteFunc([]string{h.Ownership.Err, err.Error()}, func(s string) bool { return s == "" }))
		case exists:
			h.Ownership.Exists = true
		default:
			h.Ownership.Ops[rights.Create] = created
		}
	}
	return rights.Evaluate(h, features...), nil
}

// clusterOps determines the principal's cluster operations: from
// DescribeCluster when the broker reports them, else by probes. The error
// is returned only when no broker answered at all.
func (e *Evidence) clusterOps(ops []rights.Operation) (rights.Ops, string, error) {
	if e.api.version().IsAtLeast(sarama.V2_8_0_0) {
		rsp, err := e.describeCluster(true)
		if err != nil && !errors.Is(err, sarama.ErrUnsupportedVersion) {
			return nil, "", err
		}
		if err == nil && reported(rsp.ClusterAuthorizedOperations) {
			return decodeOps(rsp.ClusterAuthorizedOperations, ops...), "", nil
		}
	}
	out := rights.Ops{}
	var why []string
	for _, op := range ops {
		if op == rights.Create {
			// Only ever a shortcut for creating the ownership topic, which
			// Rights tries on the topic itself.
			continue
		}
		held, err := e.probeCluster(op)
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", op, err))
			continue
		}
		out[op] = held
	}
	return out, joinWhy(why), nil
}

func joinWhy(why []string) string {
	s := ""
	for i, w := range why {
		if i > 0 {
			s += "; "
		}
		s += w
	}
	return s
}

// authz reads an error code of a probe: nil error and true when the
// request passed authorization, false when it was refused for it.
func authz(code sarama.KError, refused ...sarama.KError) (bool, error) {
	switch {
	case errors.Is(code, sarama.ErrNoError):
		return true, nil
	case slices.Contains(refused, code):
		return false, nil
	}
	return false, code
}

// probeCluster tries one cluster operation with a request that changes
// nothing.
func (e *Evidence) probeCluster(op rights.Operation) (bool, error) {
	name, principal, host := probeTopic, probePrincipal, probeHost
	filter := sarama.AclFilter{
		Version: 1, ResourceType: sarama.AclResourceTopic, ResourceName: &name,
		ResourcePatternTypeFilter: sarama.AclPatternLiteral, Principal: &principal, Host: &host,
		Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny,
	}
	switch op {
	case rights.Describe:
		rsp, err := e.api.describeAcls(&sarama.DescribeAclsRequest{Version: 1, AclFilter: filter})
		if err != nil {
			return false, err
		}
		if errors.Is(rsp.Err, sarama.ErrSecurityDisabled) {
			return true, nil // no authorizer: everything is allowed
		}
		return authz(rsp.Err, sarama.ErrClusterAuthorizationFailed)
	case rights.DescribeConfigs:
		rsp, err := e.api.describeConfigs(&sarama.DescribeConfigsRequest{Version: 1,
			Resources: []*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: ""}}})
		if err != nil {
			return false, err
		}
		if len(rsp.Resources) != 1 {
			return false, fmt.Errorf("describe configs: %d resources in the answer", len(rsp.Resources))
		}
		return authz(sarama.KError(rsp.Resources[0].ErrorCode), sarama.ErrClusterAuthorizationFailed)
	case rights.Alter:
		rsp, err := e.api.deleteAcls(&sarama.DeleteAclsRequest{Version: 1, Filters: []*sarama.AclFilter{&filter}})
		if err != nil {
			return false, err
		}
		if len(rsp.FilterResponses) != 1 {
			return false, fmt.Errorf("delete acls: %d results for 1 filter", len(rsp.FilterResponses))
		}
		fr := rsp.FilterResponses[0]
		if len(fr.MatchingAcls) > 0 {
			return false, errors.New("delete acls: the probe binding matched an ACL") // never expected
		}
		if errors.Is(fr.Err, sarama.ErrSecurityDisabled) {
			return true, nil
		}
		return authz(fr.Err, sarama.ErrClusterAuthorizationFailed)
	case rights.AlterConfigs:
		id := probeClientID
		rsp, err := e.api.alterClientQuotas(&sarama.AlterClientQuotasRequest{ValidateOnly: true, Entries: []sarama.AlterClientQuotasEntry{{
			Entity: []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Name: id}},
			Ops:    []sarama.ClientQuotasOp{{Key: producerByteRate, Remove: true}},
		}}})
		if err != nil {
			return false, err
		}
		if len(rsp.Entries) != 1 {
			return false, fmt.Errorf("alter client quotas: %d results for 1 entry", len(rsp.Entries))
		}
		return authz(rsp.Entries[0].ErrorCode, sarama.ErrClusterAuthorizationFailed)
	}
	return false, fmt.Errorf("no probe for cluster operation %s", op)
}

// noAuthorizer reports whether the brokers run without an authorizer
// (DescribeAcls answers SECURITY_DISABLED).
func (e *Evidence) noAuthorizer() (bool, error) {
	name := probeTopic
	rsp, err := e.api.describeAcls(&sarama.DescribeAclsRequest{Version: 1, AclFilter: sarama.AclFilter{
		Version: 1, ResourceType: sarama.AclResourceTopic, ResourceName: &name, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny,
	}})
	if err != nil {
		return false, err
	}
	return errors.Is(rsp.Err, sarama.ErrSecurityDisabled), nil
}

// canCreate asks whether the principal may create topic: CreateTopics
// with validateOnly, which creates nothing. exists is set when the topic
// is already there.
func (e *Evidence) canCreate(topic string) (ok, exists bool, err error) {
	req := &sarama.CreateTopicsRequest{Version: 1, ValidateOnly: true, Timeout: 10 * time.Second,
		TopicDetails: map[string]*sarama.TopicDetail{topic: {NumPartitions: 1, ReplicationFactor: -1}}}
	if e.api.version().IsAtLeast(sarama.V2_4_0_0) {
		req.Version = 4 // replication factor -1: the broker's default
	} else {
		req.TopicDetails[topic].ReplicationFactor = 1
	}
	rsp, err := e.api.createTopics(req)
	if err != nil {
		return false, false, fmt.Errorf("create topics (validate only): %w", err)
	}
	te, ok := rsp.TopicErrors[topic]
	if !ok || te == nil {
		return false, false, fmt.Errorf("create topics (validate only): no answer for %s", topic)
	}
	switch {
	case errors.Is(te.Err, sarama.ErrTopicAlreadyExists):
		return true, true, nil
	case errors.Is(te.Err, sarama.ErrTopicAuthorizationFailed), errors.Is(te.Err, sarama.ErrClusterAuthorizationFailed):
		return false, false, nil
	case errors.Is(te.Err, sarama.ErrNoError), errors.Is(te.Err, sarama.ErrPolicyViolation),
		errors.Is(te.Err, sarama.ErrInvalidReplicationFactor), errors.Is(te.Err, sarama.ErrInvalidPartitions),
		errors.Is(te.Err, sarama.ErrInvalidConfig):
		// Authorization passed; the broker judged the request itself.
		return true, false, nil
	}
	return false, false, fmt.Errorf("create topics (validate only) %s: %w%s", topic, te.Err, msg(te.ErrMsg))
}

// topicOps asks Metadata for the topics' authorized operations. Topics
// the principal may not describe get DESCRIBE refused and the rest
// undetermined.
func (e *Evidence) topicOps(topics []string, ops []rights.Operation) map[string]rights.TopicHeld {
	out := make(map[string]rights.TopicHeld, len(topics))
	fail := func(why string) map[string]rights.TopicHeld {
		for _, t := range topics {
			out[t] = rights.TopicHeld{Err: why}
		}
		return out
	}
	if !e.api.version().IsAtLeast(sarama.V2_3_0_0) {
		return fail("authorized operations need Kafka 2.3 or newer (Metadata v8)")
	}
	req := sarama.NewMetadataRequest(e.api.version(), topics)
	req.AllowAutoTopicCreation = false
	req.IncludeTopicAuthorizedOperations = true
	rsp, err := e.api.metadata(req)
	if err != nil {
		return fail(fmt.Sprintf("metadata: %v", err))
	}
	for _, tm := range rsp.Topics {
		if !slices.Contains(topics, tm.Name) {
			continue
		}
		switch {
		case errors.Is(tm.Err, sarama.ErrTopicAuthorizationFailed):
			// Kafka does not say whether the topic exists.
			out[tm.Name] = rights.TopicHeld{Ops: rights.Ops{rights.Describe: false},
				Err: "not allowed to describe the topic (TOPIC_AUTHORIZATION_FAILED)"}
		case errors.Is(tm.Err, sarama.ErrNoError), errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition),
			errors.Is(tm.Err, sarama.ErrLeaderNotAvailable):
			th := rights.TopicHeld{Exists: !errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition)}
			if reported(tm.TopicAuthorizedOperations) {
				th.Ops = decodeOps(tm.TopicAuthorizedOperations, ops...)
			} else {
				th.Err = "the broker reported no authorized operations"
			}
			out[tm.Name] = th
		default:
			out[tm.Name] = rights.TopicHeld{Err: fmt.Sprintf("metadata: %v", tm.Err)}
		}
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok {
			out[t] = rights.TopicHeld{Err: "metadata: no answer for the topic"}
		}
	}
	return out
}

//go:build integration

package kafkaadmin

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// The package's tests share one 3-node cluster without
// allow.everyone.if.no.acl.found: the non-super user limited holds
// exactly the ACLs a test gives it, and anonymous clients nothing.
var cluster *kafkatest.Cluster

func TestMain(m *testing.M) {
	// Node 3 has two log dirs, each a tmpfs of 64 MiB (moves within a
	// broker: logdirs_integration_test.go).
	// A moved partition's old log is removed after 1 s, not Kafka's 60.
	os.Exit(kafkatest.MainCluster(m, kafkatest.ClusterOptions{DenyIfNoACL: true, FileDeleteDelayMs: 1000,
		Tmpfs: map[int32]string{3: "64m"}, SecondDir: map[int32]string{3: "64m"}}, &cluster))
}

// client connects as a SASL/PLAIN user, the way the guard does.
func client(t *testing.T, user, password string) sarama.Client {
	t.Helper()
	cfg, err := Config{BootstrapServers: cluster.SASLAddrs(), Timeout: 10 * time.Second,
		SASL: SASLConfig{Mechanism: "PLAIN", Username: user, Password: password}}.SaramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := sarama.NewClient(cluster.SASLAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The harness' allow.everyone.if.no.acl.found=false binds anonymous
// clients: with no ACL they may not even describe a topic.
func TestClusterRefusesAnonymousWithoutACLs(t *testing.T) {
	cluster.CreateTopic(t, "anon.refused", 1, 3, nil)
	p, err := sarama.NewSyncProducer([]string{cluster.Node(1).Addr}, cluster.Node(1).ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "anon.refused", Value: sarama.StringEncoder("x")}); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("anonymous producer: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// R7.1 on a real cluster: the cluster id, each node's log dir with its
// filesystem size and partitions, and agent.CheckIdentity with the
// guard's view of the log dirs: under the broker's path, under another
// path (a bind mount, as a kubelet pod directory shows the volume), and
// another node's log dir.
func TestIdentityEvidenceOnRealCluster(t *testing.T) {
	e := NewEvidence(client(t, kafkatest.GuardUser, kafkatest.GuardPassword))
	id, err := e.ClusterID(t.Context())
	if err != nil || id != cluster.ID {
		t.Fatalf("ClusterID = %q, %v; want %q", id, err, cluster.ID)
	}
	const topic = "identity.placed"
	cluster.CreateTopicAssigned(t, topic, [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil)
	want := map[int32][]agent.TopicPartition{
		1: {{Topic: topic, Partition: 0}, {Topic: topic, Partition: 2}},
		2: {{Topic: topic, Partition: 0}, {Topic: topic, Partition: 1}},
		3: {{Topic: topic, Partition: 1}, {Topic: topic, Partition: 2}},
	}
	for _, node := range cluster.Nodes {
		var dirs []agent.BrokerLogDir
		var mine []agent.TopicPartition
		paths := append([]string{node.LogDir}, node.ExtraLogDirs...)
		// A replica's directory appears on disk a moment before its broker
		// lists the log.
		kafkatest.Eventually(t, 20*time.Second, func() error {
			var err error
			if dirs, err = e.BrokerLogDirs(t.Context(), node.NodeID); err != nil {
				return err
			}
			mine = nil
			var got []string
			for _, d := range dirs {
				if d.Err != nil {
					return fmt.Errorf("node %d log dir %s: %w", node.NodeID, d.Path, d.Err)
				}
				got = append(got, d.Path)
				for _, tp := range d.Partitions {
					if tp.Topic == topic {
						mine = append(mine, tp)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, paths) {
				return fmt.Errorf("node %d log dirs %v, want %v", node.NodeID, got, paths)
			}
			if len(mine) < len(want[node.NodeID]) {
				return fmt.Errorf("node %d lists %d partitions of %s", node.NodeID, len(mine), topic)
			}
			return nil
		})
		for _, d := range dirs {
			fs, err := agent.ReadFilesystem(d.Path)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(d.TotalBytes) != fs.TotalBytes || d.UsableBytes <= 0 {
				t.Errorf("node %d %s: broker says %d total bytes, statfs %d", node.NodeID, d.Path, d.TotalBytes, fs.TotalBytes)
			}
			if node.NodeID == 3 && d.TotalBytes != 64<<20 {
				t.Errorf("node 3's tmpfs %s: %d total bytes", d.Path, d.TotalBytes)
			}
		}
		slices.SortFunc(mine, func(a, b agent.TopicPartition) int { return int(a.Partition - b.Partition) })
		if !slices.Equal(mine, want[node.NodeID]) {
			t.Errorf("node %d holds %v of %s, want %v", node.NodeID, mine, topic, want[node.NodeID])
		}
	}

	// The guard's view of node 1's log dir, through a second path.
	alias := filepath.Join(t.TempDir(), "kubelet", "pods", "uid", "volumes", "data")
	if err := os.MkdirAll(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", "-o", "ro", cluster.Node(1).LogDir, alias).CombinedOutput(); err != nil {
		t.Fatalf("bind mount (the tests run as root): %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", alias).Run() })

	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	scan := func(path string) agent.LogDir {
		ld := scanner.ScanLogDir(path, nil)
		if ld.Err != nil {
			t.Fatal(ld.Err)
		}
		if ld.Filesystem, err = agent.ReadFilesystem(path); err != nil {
			t.Fatal(err)
		}
		return ld
	}
	dirs := []agent.LogDir{scan(cluster.Node(1).LogDir), scan(alias), scan(cluster.Node(2).LogDir)}
	node, err := agent.GuardedNode(dirs, id, -1)
	if !errors.Is(err, agent.ErrIdentityAmbiguous) {
		t.Errorf("GuardedNode over nodes 1 and 2 = %d, %v; want ambiguous", node, err)
	}
	ev, err := e.IdentityEvidence(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// Checked one at a time: a broker dir confirms one of the guard's dirs.
	for _, tc := range []struct {
		dir    agent.LogDir
		reason agent.IdentityReason
		by     string
	}{
		{dirs[0], agent.IdentityConfirmed, "path"},
		{dirs[1], agent.IdentityConfirmed, "partitions"},
		{dirs[2], agent.IdentityOtherNode, ""},
	} {
		got := agent.CheckIdentity([]agent.LogDir{tc.dir}, ev)[0]
		if got.Reason != tc.reason || got.MatchedBy != tc.by {
			t.Errorf("%s: %+v, want %q by %q", tc.dir.Path, got, tc.reason, tc.by)
		}
		if got.Confirmed() && got.BrokerPath != cluster.Node(1).LogDir {
			t.Errorf("%s confirmed as %s", tc.dir.Path, got.BrokerPath)
		}
	}
	// Another cluster's evidence confirms nothing.
	other := ev
	other.ClusterID = "another-cluster"
	if got := agent.CheckIdentity(dirs[:1], other)[0]; got.Reason != agent.IdentityOtherCluster {
		t.Errorf("other cluster: %+v", got)
	}

	// DescribeLogDirs refused: limited holds no Cluster:DESCRIBE.
	le := NewEvidence(client(t, kafkatest.LimitedUser, kafkatest.LimitedPassword))
	if _, err := le.BrokerLogDirs(t.Context(), 1); !errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		t.Errorf("DescribeLogDirs without Cluster:DESCRIBE: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	// A node that is down: an error, not an empty answer.
	if err := cluster.Node(3).StopNode(); err != nil {
		t.Fatal(err)
	}
	_, err = e.BrokerLogDirs(t.Context(), 3)
	if err2 := cluster.Node(3).StartNode(); err2 != nil {
		t.Fatal(err2)
	}
	if err == nil {
		t.Error("DescribeLogDirs of a stopped node: no error")
	}
}

// acl is one binding for limited, written as kafka-acls would take it.
type acl struct {
	resource sarama.AclResourceType
	name     string
	op       sarama.AclOperation
}

func (a acl) String() string {
	kind := "Topic"
	if a.resource == sarama.AclResourceCluster {
		kind = "Cluster"
	}
	return fmt.Sprintf("%s:%s:%s", kind, a.name, opName(a.op))
}

// minimalACLs are the documented minimal rights of the guard's principal
// for every feature, with the default ownership topic.
func minimalACLs() []acl {
	const own = "__kafka_disk_guard_protection"
	return []acl{
		{sarama.AclResourceCluster, "kafka-cluster", sarama.AclOperationDescribe},
		{sarama.AclResourceCluster, "kafka-cluster", sarama.AclOperationDescribeConfigs},
		{sarama.AclResourceCluster, "kafka-cluster", sarama.AclOperationAlter},
		{sarama.AclResourceCluster, "kafka-cluster", sarama.AclOperationAlterConfigs},
		{sarama.AclResourceTopic, "*", sarama.AclOperationDescribe},
		{sarama.AclResourceTopic, "*", sarama.AclOperationDescribeConfigs},
		{sarama.AclResourceTopic, "*", sarama.AclOperationDelete},
		{sarama.AclResourceTopic, "*", sarama.AclOperationAlterConfigs},
		{sarama.AclResourceTopic, own, sarama.AclOperationCreate},
		{sarama.AclResourceTopic, own, sarama.AclOperationRead},
		{sarama.AclResourceTopic, own, sarama.AclOperationWrite},
	}
}

func binding(a acl) (sarama.Resource, sarama.Acl) {
	return sarama.Resource{ResourceType: a.resource, ResourceName: a.name, ResourcePatternType: sarama.AclPatternLiteral},
		sarama.Acl{Principal: "User:" + kafkatest.LimitedUser, Host: "*", Operation: a.op, PermissionType: sarama.AclPermissionAllow}
}

func grant(t *testing.T, admin sarama.ClusterAdmin, acls ...acl) {
	t.Helper()
	var ras []*sarama.ResourceAcls
	for _, a := range acls {
		r, b := binding(a)
		ras = append(ras, &sarama.ResourceAcls{Resource: r, Acls: []*sarama.Acl{&b}})
	}
	if err := admin.CreateACLs(ras); err != nil {
		t.Fatalf("create acls: %v", err)
	}
}

func revoke(t *testing.T, admin sarama.ClusterAdmin, acls ...acl) {
	t.Helper()
	for _, a := range acls {
		r, b := binding(a)
		name, principal, host := r.ResourceName, b.Principal, b.Host
		if _, err := admin.DeleteACL(sarama.AclFilter{ResourceType: r.ResourceType, ResourceName: &name, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
			Principal: &principal, Host: &host, Operation: b.Operation, PermissionType: b.PermissionType}, false); err != nil {
			t.Fatalf("delete acl %s: %v", a, err)
		}
	}
}

// Rights on a real cluster (issue 11 point 6): the super user holds
// everything; limited with exactly the documented minimal ACLs holds
// everything; with one ACL fewer the report names exactly what is
// missing, per feature.
func TestRightsOnRealCluster(t *testing.T) {
	topics := []string{"rights.a", "rights.b"}
	for _, tp := range topics {
		cluster.CreateTopic(t, tp, 1, 3, nil)
	}
	q := rights.Query{Features: rights.Features(), Topics: topics, OwnershipTopic: "__kafka_disk_guard_protection"}

	report, err := NewEvidence(client(t, kafkatest.GuardUser, kafkatest.GuardPassword)).Rights(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() || report.Checked != 2 {
		t.Fatalf("super user: %s (checked %d topics)", report, report.Checked)
	}

	admin := cluster.Admin(t)
	limited := NewEvidence(client(t, kafkatest.LimitedUser, kafkatest.LimitedPassword))
	// expect polls until the report's gaps are want: ACL changes reach
	// every broker through the metadata log, within milliseconds.
	expect := func(what string, want []string) {
		t.Helper()
		var last rights.Report
		kafkatest.Eventually(t, 20*time.Second, func() error {
			r, err := limited.Rights(t.Context(), q)
			if err != nil {
				return err
			}
			last = r
			if got := gaps(r); !slices.Equal(got, want) {
				return fmt.Errorf("%s: gaps\n got  %q\n want %q", what, got, want)
			}
			return nil
		})
		t.Logf("%s:\n%s", what, last)
	}

	expect("limited without any ACL", []string{
		"observe cluster:DESCRIBE", "observe cluster:DESCRIBE_CONFIGS",
		"observe topics:DESCRIBE rights.a,rights.b", "observe topics:DESCRIBE_CONFIGS rights.a,rights.b ?",
		"delete_records topics:DESCRIBE rights.a,rights.b", "delete_records topics:DELETE rights.a,rights.b ?",
		"protect_acl cluster:DESCRIBE", "protect_acl cluster:ALTER", "protect_acl cluster:DESCRIBE_CONFIGS",
		"protect_acl ownership:CREATE", "protect_acl ownership:DESCRIBE", "protect_acl ownership:READ ?", "protect_acl ownership:WRITE ?",
		"protect_quota cluster:DESCRIBE_CONFIGS", "protect_quota cluster:ALTER_CONFIGS",
		"protect_quota ownership:CREATE", "protect_quota ownership:DESCRIBE", "protect_quota ownership:READ ?", "protect_quota ownership:WRITE ?",
		"tiered topics:DESCRIBE_CONFIGS rights.a,rights.b ?", "tiered topics:ALTER_CONFIGS rights.a,rights.b ?",
		"cordon cluster:DESCRIBE_CONFIGS", "cordon cluster:ALTER_CONFIGS",
		"cordon ownership:CREATE", "cordon ownership:DESCRIBE", "cordon ownership:READ ?", "cordon ownership:WRITE ?",
		"move cluster:DESCRIBE", "move cluster:ALTER", "move cluster:DESCRIBE_CONFIGS", "move cluster:ALTER_CONFIGS",
		"move ownership:CREATE", "move ownership:DESCRIBE", "move ownership:READ ?", "move ownership:WRITE ?",
		"reassign cluster:DESCRIBE", "reassign topics:DESCRIBE rights.a,rights.b", "reassign cluster:ALTER",
		"reassign cluster:DESCRIBE_CONFIGS", "reassign cluster:ALTER_CONFIGS",
		"reassign topics:DESCRIBE_CONFIGS rights.a,rights.b ?", "reassign topics:ALTER_CONFIGS rights.a,rights.b ?",
		"reassign ownership:CREATE", "reassign ownership:DESCRIBE", "reassign ownership:READ ?", "reassign ownership:WRITE ?",
		"admission cluster:DESCRIBE", "admission cluster:DESCRIBE_CONFIGS",
		"admission topics:DESCRIBE rights.a,rights.b", "admission topics:DESCRIBE_CONFIGS rights.a,rights.b ?",
	})

	grant(t, admin, minimalACLs()...)
	t.Cleanup(func() { revoke(t, admin, minimalACLs()...) })
	expect("limited with the documented minimal ACLs", nil)

	// One ACL fewer at a time: exactly that one is named.
	onCluster := func(op sarama.AclOperation) acl { return acl{sarama.AclResourceCluster, "kafka-cluster", op} }
	for _, tc := range []struct {
		drop []acl
		want []string
	}{
		{[]acl{onCluster(sarama.AclOperationAlter)}, []string{"protect_acl cluster:ALTER", "move cluster:ALTER", "reassign cluster:ALTER"}},
		{[]acl{{sarama.AclResourceTopic, "*", sarama.AclOperationDelete}}, []string{"delete_records topics:DELETE rights.a,rights.b"}},
		{[]acl{{sarama.AclResourceTopic, "*", sarama.AclOperationAlterConfigs}}, []string{"tiered topics:ALTER_CONFIGS rights.a,rights.b", "reassign topics:ALTER_CONFIGS rights.a,rights.b"}},
		{[]acl{onCluster(sarama.AclOperationAlterConfigs)}, []string{"protect_quota cluster:ALTER_CONFIGS", "cordon cluster:ALTER_CONFIGS", "move cluster:ALTER_CONFIGS", "reassign cluster:ALTER_CONFIGS"}},
		{[]acl{{sarama.AclResourceTopic, "__kafka_disk_guard_protection", sarama.AclOperationWrite}},
			[]string{"protect_acl ownership:WRITE", "protect_quota ownership:WRITE", "cordon ownership:WRITE", "move ownership:WRITE", "reassign ownership:WRITE"}},
		{[]acl{{sarama.AclResourceTopic, "__kafka_disk_guard_protection", sarama.AclOperationCreate}},
			[]string{"protect_acl ownership:CREATE", "protect_quota ownership:CREATE", "cordon ownership:CREATE", "move ownership:CREATE", "reassign ownership:CREATE"}},
		// Kafka's implications: ALTER grants DESCRIBE, ALTER_CONFIGS grants
		// DESCRIBE_CONFIGS; dropping DESCRIBE alone changes nothing.
		{[]acl{onCluster(sarama.AclOperationDescribe)}, nil},
		// Without any Cluster:DESCRIBE the broker does not report cluster
		// operations: the probes find ALTER refused and the configs rights held.
		{[]acl{onCluster(sarama.AclOperationDescribe), onCluster(sarama.AclOperationAlter)},
			[]string{"observe cluster:DESCRIBE", "protect_acl cluster:DESCRIBE", "protect_acl cluster:ALTER", "move cluster:DESCRIBE", "move cluster:ALTER",
				"reassign cluster:DESCRIBE", "reassign cluster:ALTER", "admission cluster:DESCRIBE"}},
		{[]acl{onCluster(sarama.AclOperationDescribeConfigs), onCluster(sarama.AclOperationAlterConfigs), onCluster(sarama.AclOperationDescribe), onCluster(sarama.AclOperationAlter)},
			[]string{"observe cluster:DESCRIBE", "observe cluster:DESCRIBE_CONFIGS", "protect_acl cluster:DESCRIBE", "protect_acl cluster:ALTER",
				"protect_acl cluster:DESCRIBE_CONFIGS", "protect_quota cluster:DESCRIBE_CONFIGS", "protect_quota cluster:ALTER_CONFIGS",
				"cordon cluster:DESCRIBE_CONFIGS", "cordon cluster:ALTER_CONFIGS",
				"move cluster:DESCRIBE", "move cluster:ALTER", "move cluster:DESCRIBE_CONFIGS", "move cluster:ALTER_CONFIGS",
				"reassign cluster:DESCRIBE", "reassign cluster:ALTER", "reassign cluster:DESCRIBE_CONFIGS", "reassign cluster:ALTER_CONFIGS",
				"admission cluster:DESCRIBE", "admission cluster:DESCRIBE_CONFIGS"}},
	} {
		names := make([]string, len(tc.drop))
		for i, a := range tc.drop {
			names[i] = a.String()
		}
		what := strings.Join(names, ", ")
		revoke(t, admin, tc.drop...)
		expect("without "+what, tc.want)
		grant(t, admin, tc.drop...)
		expect("with "+what+" again", nil)
	}

	// Once the ownership topic exists, creating it is no longer needed.
	cluster.CreateTopic(t, q.OwnershipTopic, 1, 3, map[string]string{"cleanup.policy": "compact"})
	revoke(t, admin, acl{sarama.AclResourceTopic, q.OwnershipTopic, sarama.AclOperationCreate})
	expect("ownership topic exists, no CREATE", nil)
	grant(t, admin, acl{sarama.AclResourceTopic, q.OwnershipTopic, sarama.AclOperationCreate})
	// Probes changed nothing: no ACL of the probe principal, no quota.
	res, err := admin.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		for _, a := range r.Acls {
			if strings.Contains(a.Principal, "probe") || strings.Contains(r.ResourceName, "probe") {
				t.Errorf("a probe left an ACL: %+v %+v", r.Resource, a)
			}
		}
	}
	quotas, err := admin.DescribeClientQuotas(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(quotas) != 0 {
		t.Errorf("a probe left a quota: %+v", quotas)
	}
	if md, err := admin.DescribeTopics([]string{probeTopic}); err != nil || len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("the probe topic: %v %v", md, err)
	}
}

//go:build integration

package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// SASL/PLAIN users besides the guard, on the single broker and every node
// of a Cluster: admin is a super user, limited is not (it holds only the
// ACLs a test gives it).
const (
	AdminUser       = "admin"
	AdminPassword   = "admin-secret"
	LimitedUser     = "limited"
	LimitedPassword = "limited-secret"
)

// ClusterOptions choose a Cluster's settings. Node ids are 1..Nodes.
type ClusterOptions struct {
	// Nodes is the number of nodes, each a combined broker and controller
	// (default 3). The controller quorum is static: every node votes.
	Nodes int
	// DenyIfNoACL sets allow.everyone.if.no.acl.found=false on every node
	// (default: true, as on the single broker).
	DenyIfNoACL bool
	// Tmpfs puts a node's log dir on a tmpfs of that size ("64m"), by node id.
	Tmpfs map[int32]string
	// SecondDir gives a node a second log dir (JBOD), node-N/data-2 on a
	// tmpfs of that size ("64m"), by node id; it is the node's
	// Broker.ExtraLogDirs[0].
	SecondDir map[int32]string
	// RetentionCheckMs, FileDeleteDelayMs: as in Options, for every node.
	RetentionCheckMs  int
	FileDeleteDelayMs int
	// Props are extra server.properties lines for every node; NodeProps
	// for one node, by node id.
	Props     []string
	NodeProps map[int32][]string
	// Classpath adds jars to every node's classpath (plugins).
	Classpath []string
}

// Cluster is a running multi-node KRaft cluster on loopback, started by
// scripts/kafka.sh cluster-up. Every node has the single broker's
// listeners (PLAINTEXT anonymous, SASL_PLAINTEXT for guard, admin and
// limited); inter-broker and controller traffic authenticates as
// User:broker, a super user, so ordinary clients stay subject to ACLs.
type Cluster struct {
	Dir   string    // work dir: cluster.env, node-N/
	ID    string    // cluster.id, as every meta.properties names it
	Nodes []*Broker // Nodes[i] has node id i+1
	// StartDuration is how long cluster-up took (format, start, every
	// node seeing every broker).
	StartDuration time.Duration
	script        string
	opts          ClusterOptions
}

// StartCluster formats and starts a cluster in a fresh directory, waiting
// until every node answers with metadata naming every broker.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kdg-cluster-")
	if err != nil {
		return nil, err
	}
	base, err := freePorts(4 * opts.Nodes)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, script: filepath.Join(root, "scripts", "kafka.sh"), opts: opts}
	args := []string{"cluster-up", "--dir", dir, "--port", strconv.Itoa(base), "--nodes", strconv.Itoa(opts.Nodes),
		"--allow-everyone", strconv.FormatBool(!opts.DenyIfNoACL)}
	if opts.RetentionCheckMs > 0 {
		args = append(args, "--retention-check-ms", strconv.Itoa(opts.RetentionCheckMs))
	}
	if opts.FileDeleteDelayMs > 0 {
		args = append(args, "--file-delete-delay-ms", strconv.Itoa(opts.FileDeleteDelayMs))
	}
	for _, p := range opts.Props {
		args = append(args, "--prop", p)
	}
	for id := int32(1); id <= int32(opts.Nodes); id++ {
		if size := opts.Tmpfs[id]; size != "" {
			args = append(args, "--node-tmpfs", fmt.Sprintf("%d=%s", id, size))
		}
		for _, p := range opts.NodeProps[id] {
			args = append(args, "--node-prop", fmt.Sprintf("%d:%s", id, p))
		}
		port := base + 4*int(id-1)
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", id))
		var extra []string
		if size := opts.SecondDir[id]; size != "" {
			args = append(args, "--node-second-dir", fmt.Sprintf("%d=%s", id, size))
			extra = []string{filepath.Join(nodeDir, "data-2")}
		}
		c.Nodes = append(c.Nodes, &Broker{
			ExtraLogDirs: extra,
			Dir:          nodeDir,
			LogDir:       filepath.Join(nodeDir, "data"),
			Addr:         fmt.Sprintf("127.0.0.1:%d", port),
			SASLAddr:     fmt.Sprintf("127.0.0.1:%d", port+1),
			NodeID:       id,
			script:       c.script,
			cluster:      c,
		})
	}
	start := time.Now()
	cmd := exec.Command(c.script, args...)
	cmd.Env = os.Environ()
	if len(opts.Classpath) > 0 {
		cmd.Env = append(cmd.Env, "KDG_KAFKA_CLASSPATH="+strings.Join(opts.Classpath, ":"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		exec.Command(c.script, "cluster-down", "--dir", dir).Run()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start cluster: %w\n%s", err, out)
	}
	c.StartDuration = time.Since(start)
	env, err := os.ReadFile(filepath.Join(dir, "cluster.env"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "CLUSTER_ID="); ok {
			c.ID = v
		}
	}
	return c, nil
}

// Stop stops every node and removes the cluster's directory.
func (c *Cluster) Stop() error {
	out, err := exec.Command(c.script, "cluster-down", "--dir", c.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop cluster: %w\n%s", err, out)
	}
	return os.RemoveAll(c.Dir)
}

// Node returns the node with that id.
func (c *Cluster) Node(id int32) *Broker {
	if id < 1 || int(id) > len(c.Nodes) {
		panic(fmt.Sprintf("kafkatest: no node %d in a cluster of %d", id, len(c.Nodes)))
	}
	return c.Nodes[id-1]
}

// Addrs are every node's PLAINTEXT address (anonymous clients).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, b := range c.Nodes {
		out[i] = b.Addr
	}
	return out
}

// SASLAddrs are every node's SASL_PLAINTEXT address.
func (c *Cluster) SASLAddrs() []string {
	out := make([]string, len(c.Nodes))
	for i, b := range c.Nodes {
		out[i] = b.SASLAddr
	}
	return out
}

// StopNode stops one node of a cluster; its data stays, and StartNode
// brings it back. For failure tests.
func (b *Broker) StopNode() error {
	if b.cluster == nil {
		return errors.New("StopNode: not a cluster node")
	}
	out, err := exec.Command(b.script, "node-stop", "--dir", b.cluster.Dir, "--node", strconv.Itoa(int(b.NodeID))).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop node %d: %w\n%s", b.NodeID, err, out)
	}
	return nil
}

// StartNode starts a stopped node again and waits until it answers with
// metadata naming every broker.
func (b *Broker) StartNode() error {
	if b.cluster == nil {
		return errors.New("StartNode: not a cluster node")
	}
	cmd := exec.Command(b.script, "node-start", "--dir", b.cluster.Dir, "--node", strconv.Itoa(int(b.NodeID)))
	cmd.Env = os.Environ()
	if len(b.cluster.opts.Classpath) > 0 {
		cmd.Env = append(cmd.Env, "KDG_KAFKA_CLASSPATH="+strings.Join(b.cluster.opts.Classpath, ":"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start node %d: %w\n%s", b.NodeID, err, out)
	}
	return nil
}

// MainCluster starts one cluster for a package's tests, runs them, stops
// it. It returns the exit code for os.Exit; a cluster that cannot start is
// exit 1 (integration tests never skip).
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.MainCluster(m, kafkatest.ClusterOptions{}, &cluster)) }
func MainCluster(m *testing.M, opts ClusterOptions, out **Cluster) int {
	c, err := StartCluster(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest: the integration tests need a real cluster and it did not start:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "kafkatest: cluster of %d nodes up in %s\n", len(c.Nodes), c.StartDuration.Round(100*time.Millisecond))
	*out = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest:", err)
	}
	return code
}

// UserConfig is a Sarama config for a SASL/PLAIN user on SASLAddr.
func (b *Broker) UserConfig(user, password string) *sarama.Config {
	c := b.GuardConfig()
	c.Net.SASL.User = user
	c.Net.SASL.Password = password
	return c
}

// Admin returns a cluster admin as the guard (a super user) on every
// node's SASL listener, closed when the test ends.
func (c *Cluster) Admin(t testing.TB) sarama.ClusterAdmin {
	t.Helper()
	return c.AdminAs(t, GuardUser, GuardPassword)
}

// AdminAs returns a cluster admin as a SASL/PLAIN user, closed when the
// test ends.
func (c *Cluster) AdminAs(t testing.TB, user, password string) sarama.ClusterAdmin {
	t.Helper()
	a, err := sarama.NewClusterAdmin(c.SASLAddrs(), c.Nodes[0].UserConfig(user, password))
	if err != nil {
		t.Fatalf("admin client as %s: %v", user, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// CreateTopic creates a topic with replication factor rf and waits until
// every replica's partition directory exists on its node and every
// partition's ISR is complete.
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	c.createTopic(t, name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf, ConfigEntries: entryMap(configs)})
}

// CreateTopicAssigned creates a topic with a replica assignment (one list
// of node ids per partition, the first the preferred leader) and waits as
// CreateTopic does.
func (c *Cluster) CreateTopicAssigned(t testing.TB, name string, assignment [][]int32, configs map[string]string) {
	t.Helper()
	ra := make(map[int32][]int32, len(assignment))
	for p, nodes := range assignment {
		ra[int32(p)] = nodes
	}
	c.createTopic(t, name, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: ra, ConfigEntries: entryMap(configs)})
}

func (c *Cluster) createTopic(t testing.TB, name string, detail *sarama.TopicDetail) {
	t.Helper()
	a := c.Admin(t)
	if err := a.CreateTopic(name, detail, false); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	Eventually(t, 30*time.Second, func() error {
		md, err := a.DescribeTopics([]string{name})
		if err != nil {
			return err
		}
		if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) == 0 {
			return fmt.Errorf("topic %s not described yet", name)
		}
		for _, p := range md[0].Partitions {
			if len(p.Isr) != len(p.Replicas) {
				return fmt.Errorf("%s-%d: ISR %v of replicas %v", name, p.ID, p.Isr, p.Replicas)
			}
			for _, r := range p.Replicas {
				n := c.Node(r)
				var err error
				for _, d := range append([]string{n.LogDir}, n.ExtraLogDirs...) {
					if _, err = os.Stat(filepath.Join(d, fmt.Sprintf("%s-%d", name, p.ID))); err == nil {
						break
					}
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Partition describes one partition: its leader, replicas and ISR, sorted
// (the leader is -1 without one).
func (c *Cluster) Partition(t testing.TB, topic string, partition int32) (leader int32, replicas, isr []int32) {
	t.Helper()
	md, err := c.Admin(t).DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("describe topic %s: %v", topic, err)
	}
	if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) {
		t.Fatalf("describe topic %s: %v", topic, md)
	}
	for _, p := range md[0].Partitions {
		if p.ID == partition {
			replicas, isr = slices.Clone(p.Replicas), slices.Clone(p.Isr)
			slices.Sort(replicas)
			slices.Sort(isr)
			return p.Leader, replicas, isr
		}
	}
	t.Fatalf("%s-%d not found", topic, partition)
	return -1, nil, nil
}

func entryMap(configs map[string]string) map[string]*string {
	entries := make(map[string]*string, len(configs))
	for k, v := range configs {
		entries[k] = &v
	}
	return entries
}

// onNode turns detail into an explicit assignment of every partition to
// one node.
func onNode(detail *sarama.TopicDetail, node int32) *sarama.TopicDetail {
	d := *detail
	d.ReplicaAssignment = make(map[int32][]int32, d.NumPartitions)
	for p := range d.NumPartitions {
		d.ReplicaAssignment[p] = []int32{node}
	}
	d.NumPartitions, d.ReplicationFactor = -1, -1
	return &d
}

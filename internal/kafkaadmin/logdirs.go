package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// AlterLogDirsThrottle is the broker config that throttles every copy
// between log dirs of a broker (Kafka's ReplicaAlterLogDirs threads
// share it). Unset, copies run unthrottled.
const AlterLogDirsThrottle = "replica.alter.log.dirs.io.max.bytes.per.second"

// LogDirMoves moves partitions between log dirs of one broker
// (AlterReplicaLogDirs) and sets and restores the broker's throttle for
// it (spec R3.8). It takes the connection at each call.
type LogDirMoves struct {
	src connSource
}

// LogDirMoves returns the adapter over the link.
func (l *Link) LogDirMoves() *LogDirMoves { return &LogDirMoves{src: l} }

// NewLogDirMoves is the adapter over an open Sarama client (tests).
func NewLogDirMoves(client sarama.Client) (*LogDirMoves, error) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	return &LogDirMoves{src: fixedConn{&conn{client: client, admin: admin}}}, nil
}

type fixedConn struct{ c *conn }

func (f fixedConn) conn() (*conn, error) { return f.c, nil }

// Move asks broker to move each partition's replica to the log dir
// named (AlterReplicaLogDirs v1, on a connection of its own: Sarama does
// not speak it). The answer is per partition: nil when the broker
// accepted the move (it then copies in the background; the new log is the
// -future one until the swap). A moved partition with no replica on the
// broker answers REPLICA_NOT_AVAILABLE, a dir the broker does not have
// LOG_DIR_NOT_FOUND.
func (m *LogDirMoves) Move(ctx context.Context, broker int32, moves []enforcer.Move) (map[string]error, error) {
	c, err := m.src.conn()
	if err != nil {
		return nil, err
	}
	b, err := c.client.Broker(broker)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", broker, err)
	}
	req := map[string]map[string][]int32{}
	for _, mv := range moves {
		if req[mv.To] == nil {
			req[mv.To] = map[string][]int32{}
		}
		req[mv.To][mv.Topic] = append(req[mv.To][mv.Topic], mv.Partition)
	}
	wc, err := dialWire(ctx, c.client.Config(), b.Addr())
	if err != nil {
		return nil, err
	}
	defer wc.close()
	res, err := wc.alterReplicaLogDirs(req)
	if err != nil {
		return nil, fmt.Errorf("alter replica log dirs on broker %d: %w", broker, err)
	}
	out := map[string]error{}
	for _, mv := range moves {
		key := mv.Topic + "/" + strconv.Itoa(int(mv.Partition))
		perr, ok := res[mv.Topic][mv.Partition]
		if !ok {
			perr = errors.New("no answer for the partition")
		}
		out[key] = perr
	}
	return out, nil
}

// Replicas reads broker's log dirs (DescribeLogDirs): every replica with
// its dir, size and whether it is a -future log (a move in flight). A log
// dir the broker reports an error for is an error.
func (m *LogDirMoves) Replicas(ctx context.Context, broker int32) ([]enforcer.ReplicaDir, error) {
	c, err := m.src.conn()
	if err != nil {
		return nil, err
	}
	dirs, err := c.admin.DescribeLogDirs([]int32{broker})
	if err != nil {
		return nil, fmt.Errorf("describe log dirs of broker %d: %w", broker, err)
	}
	var out []enforcer.ReplicaDir
	for _, d := range dirs[broker] {
		if !errors.Is(d.ErrorCode, sarama.ErrNoError) {
			return nil, fmt.Errorf("log dir %s of broker %d: %w", d.Path, broker, d.ErrorCode)
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				out = append(out, enforcer.ReplicaDir{Topic: t.Topic, Partition: p.PartitionID, Dir: d.Path,
					Bytes: p.Size, Future: p.IsTemporary})
			}
		}
	}
	return out, nil
}

// Throttle reads broker's own dynamic value of AlterLogDirsThrottle: set
// is false when the broker has none (a cluster-wide default or
// server.properties value is not the broker's dynamic config and is left
// alone).
func (m *LogDirMoves) Throttle(ctx context.Context, broker int32) (value string, set bool, err error) {
	c, err := m.src.conn()
	if err != nil {
		return "", false, err
	}
	res, err := c.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource,
		Name: strconv.Itoa(int(broker)), ConfigNames: []string{AlterLogDirsThrottle}})
	if err != nil {
		return "", false, fmt.Errorf("describe %s of broker %d: %w", AlterLogDirsThrottle, broker, err)
	}
	for _, e := range res {
		if e.Name == AlterLogDirsThrottle && e.Source == sarama.SourceDynamicBroker {
			return e.Value, true, nil
		}
	}
	return "", false, nil
}

// SetThrottle sets broker's dynamic AlterLogDirsThrottle to value (bytes
// per second); with set false it deletes the broker's value (Kafka then
// uses the cluster default or none).
func (m *LogDirMoves) SetThrottle(ctx context.Context, broker int32, value string, set bool) error {
	c, err := m.src.conn()
	if err != nil {
		return err
	}
	e := sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}
	if set {
		v := value
		e = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	if err := c.admin.IncrementalAlterConfig(sarama.BrokerResource, strconv.Itoa(int(broker)),
		map[string]sarama.IncrementalAlterConfigsEntry{AlterLogDirsThrottle: e}, false); err != nil {
		return fmt.Errorf("alter %s of broker %d: %w", AlterLogDirsThrottle, broker, err)
	}
	return nil
}

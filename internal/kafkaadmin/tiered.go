package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Kafka's ListOffsets timestamps for tiered storage (KIP-405, KIP-1005;
// ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP and LATEST_TIERED_TIMESTAMP).
const (
	earliestLocalTimestamp = -4 // the local log start offset; request version 8 and up
	latestTieredTimestamp  = -5 // the highest offset in remote storage; request version 9 and up
	// tieredListOffsetsVersion is the ListOffsets version the tiered
	// timestamps need. Versions 7 to 9 only added timestamps: their
	// request and response bodies are version 6's, which Sarama's
	// OffsetRequest/OffsetResponse encode and decode for any version from
	// 6 on (flexible, header v2). Sarama only caps the version it picks
	// by itself at 6, so the adapter sets it.
	tieredListOffsetsVersion = 9
)

// RemoteOffsetsFetcher reads tiered partitions' offsets from their
// leaders: ListOffsets v9 with timestamps -2 (log start), -4 (local log
// start) and -5 (highest offset in remote storage), read_uncommitted. It
// implements agent.RemoteOffsetsFetcher.
type RemoteOffsetsFetcher struct {
	src connSource
}

var _ agent.RemoteOffsetsFetcher = (*RemoteOffsetsFetcher)(nil)

// RemoteOffsetsFetcher returns a fetcher over the link.
func (l *Link) RemoteOffsetsFetcher() *RemoteOffsetsFetcher {
	return &RemoteOffsetsFetcher{src: l}
}

// NewRemoteOffsetsFetcher returns a fetcher on a client the caller owns
// (tests).
func NewRemoteOffsetsFetcher(client sarama.Client) *RemoteOffsetsFetcher {
	return &RemoteOffsetsFetcher{src: fixed{&conn{client: client}}}
}

// FetchRemoteOffsets asks each partition's leader. Every partition asked
// for is in the result; one whose offsets could not be read carries Err.
// The error is only for a cancelled context or no connection
// (ErrNotConnected).
func (f *RemoteOffsetsFetcher) FetchRemoteOffsets(ctx context.Context, parts []agent.TopicPartition) (map[agent.TopicPartition]agent.RemoteOffsets, error) {
	c, err := f.src.conn()
	if err != nil {
		return nil, err
	}
	out := make(map[agent.TopicPartition]agent.RemoteOffsets, len(parts))
	byLeader := map[*sarama.Broker][]agent.TopicPartition{}
	for _, tp := range parts {
		b, err := c.client.Leader(tp.Topic, tp.Partition)
		if err != nil {
			out[tp] = agent.RemoteOffsets{Err: fmt.Sprintf("leader: %v", err), Time: time.Now()}
			continue
		}
		byLeader[b] = append(byLeader[b], tp)
	}
	for b, tps := range byLeader {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var res [3]*sarama.OffsetResponse
		var reqErr error
		for i, at := range []int64{sarama.OffsetOldest, earliestLocalTimestamp, latestTieredTimestamp} {
			req := &sarama.OffsetRequest{Version: tieredListOffsetsVersion}
			for _, tp := range tps {
				req.AddBlock(tp.Topic, tp.Partition, at, 1)
			}
			r, err := b.GetAvailableOffsets(req)
			if err == nil && req.Version < tieredListOffsetsVersion {
				// Sarama lowered the version to the broker's maximum.
				err = fmt.Errorf("broker %d answers ListOffsets up to version %d; tiered offsets need %d (Kafka 3.9 or newer)", b.ID(), req.Version, tieredListOffsetsVersion)
			}
			if err != nil {
				reqErr = fmt.Errorf("list offsets on broker %d: %w", b.ID(), err)
				break
			}
			res[i] = r
		}
		now := time.Now()
		for _, tp := range tps {
			if reqErr != nil {
				out[tp] = agent.RemoteOffsets{Err: reqErr.Error(), Time: now}
				continue
			}
			var offs [3]int64
			var errs []error
			for i, r := range res {
				blk := r.GetBlock(tp.Topic, tp.Partition)
				switch {
				case blk == nil:
					errs = append(errs, errors.New("no answer for the partition"))
				case !errors.Is(blk.Err, sarama.ErrNoError):
					errs = append(errs, blk.Err)
				default:
					offs[i] = blk.Offset
				}
			}
			if len(errs) > 0 {
				out[tp] = agent.RemoteOffsets{Err: fmt.Sprintf("list offsets: %v", errors.Join(errs...)), Time: now}
				continue
			}
			out[tp] = agent.RemoteOffsets{LogStart: offs[0], LocalLogStart: offs[1], HighestUploaded: offs[2], Time: now,
				Leader: b.ID(), LeaderKnown: true, LeaderHighestUploaded: offs[2]}
		}
	}
	return out, nil
}

package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// streamField is the one field of a stream entry; its value is the record's JSON.
const streamField = "r"

// readPage is how many entries ReadStream and Tail fetch per command.
const readPage = 1000

// RedisSink appends records to a Redis stream: XADD key MAXLEN ~ maxLen *
// with the single field "r" holding the record's JSON. A batch is sent in
// one pipeline (one round trip). The stream is shared by every replica;
// each writer's chain runs through it interleaved with the others'.
//
// The key is chosen by the caller; on Redis Cluster it needs no hash tag of
// its own (one key is one slot), but by convention it is
// "<prefix>{audit}:stream".
type RedisSink struct {
	client redis.UniversalClient
	key    string
	maxLen int64
}

// NewRedisSink returns a sink that writes to the stream key. maxLen bounds
// the stream approximately (Redis trims whole nodes, so a few more may be
// kept); 0 keeps everything. Trimming removes the oldest records of every
// writer, which Verify accepts. The client is not closed by Close.
func NewRedisSink(client redis.UniversalClient, key string, maxLen int64) *RedisSink {
	return &RedisSink{client: client, key: key, maxLen: maxLen}
}

func (s *RedisSink) String() string { return "redis:" + s.key }

// Write adds recs to the stream in one pipeline. If the pipeline fails part
// way, the entries Redis already added stay; a retry adds them again, as
// exact repeats that Verify accepts.
func (s *RedisSink) Write(ctx context.Context, recs []Record) error {
	const op = "audit.RedisSink.Write"
	if len(recs) == 0 {
		return nil
	}
	pipe := s.client.Pipeline()
	for i := range recs {
		j, err := encodeRecord(nil, &recs[i])
		if err != nil {
			return &Error{Op: op, Kind: errkind.Invalid, Where: s.key, Err: err}
		}
		pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: s.key,
			MaxLen: s.maxLen,
			Approx: true,
			Values: []any{streamField, j[:len(j)-1]}, // without the newline
		})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return &Error{Op: op, Kind: errkind.Unavailable, Where: s.key, Err: err}
	}
	return nil
}

// Read returns every record the stream keeps, oldest first.
func (s *RedisSink) Read(ctx context.Context) ([]Record, error) {
	return ReadStream(ctx, s.client, s.key, 0)
}

// Close does nothing: the client belongs to the caller.
func (s *RedisSink) Close() error { return nil }

// ReadStream returns the newest count records of the stream key (0 means
// all), oldest first. An entry that does not hold a record is an *Error of
// kind errkind.Invalid naming the entry id.
func ReadStream(ctx context.Context, client redis.UniversalClient, key string, count int64) ([]Record, error) {
	const op = "audit.ReadStream"
	if count > 0 {
		msgs, err := client.XRevRangeN(ctx, key, "+", "-", count).Result()
		if err != nil {
			return nil, &Error{Op: op, Kind: errkind.Unavailable, Where: key, Err: err}
		}
		slices.Reverse(msgs)
		return decodeMessages(op, key, msgs)
	}
	var recs []Record
	start := "-"
	for {
		msgs, err := client.XRangeN(ctx, key, start, "+", readPage).Result()
		if err != nil {
			return nil, &Error{Op: op, Kind: errkind.Unavailable, Where: key, Err: err}
		}
		page, err := decodeMessages(op, key, msgs)
		if err != nil {
			return nil, err
		}
		recs = append(recs, page...)
		if len(msgs) < readPage {
			return recs, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// Tail returns the records added to the stream key after the entry fromID,
// at most 1000, waiting up to block for the first one when there are none
// (0 or less: do not wait). fromID "0" (or "") starts at the beginning of
// the stream and "$" at its current end. It also returns the id to pass to
// the next call: the last entry's, or the one it started from when nothing
// came, so that `bot audit tail` misses nothing between calls.
func Tail(ctx context.Context, client redis.UniversalClient, key, fromID string, block time.Duration) ([]Record, string, error) {
	const op = "audit.Tail"
	switch fromID {
	case "":
		fromID = "0"
	case "$":
		last, err := client.XRevRangeN(ctx, key, "+", "-", 1).Result()
		if err != nil {
			return nil, fromID, &Error{Op: op, Kind: errkind.Unavailable, Where: key, Err: err}
		}
		fromID = "0-0"
		if len(last) > 0 {
			fromID = last[0].ID
		}
	}
	args := &redis.XReadArgs{Streams: []string{key, fromID}, Count: readPage, Block: -1}
	if block > 0 {
		args.Block = max(block, time.Millisecond)
	}
	streams, err := client.XRead(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fromID, nil
	}
	if err != nil {
		return nil, fromID, &Error{Op: op, Kind: errkind.Unavailable, Where: key, Err: err}
	}
	var msgs []redis.XMessage
	for _, st := range streams {
		msgs = append(msgs, st.Messages...)
	}
	if len(msgs) == 0 {
		return nil, fromID, nil
	}
	recs, err := decodeMessages(op, key, msgs)
	if err != nil {
		return nil, fromID, err
	}
	return recs, msgs[len(msgs)-1].ID, nil
}

func decodeMessages(op, key string, msgs []redis.XMessage) ([]Record, error) {
	recs := make([]Record, 0, len(msgs))
	for _, m := range msgs {
		v, ok := m.Values[streamField].(string)
		if !ok {
			return nil, &Error{Op: op, Kind: errkind.Invalid, Where: key + " entry " + m.ID,
				Err: fmt.Errorf("no %q field", streamField)}
		}
		r, err := decodeRecord([]byte(v))
		if err != nil {
			return nil, &Error{Op: op, Kind: errkind.Invalid, Where: key + " entry " + m.ID,
				Err: fmt.Errorf("not a record: %w", err)}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

var (
	_ Sink   = (*RedisSink)(nil)
	_ Reader = (*RedisSink)(nil)
)

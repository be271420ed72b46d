package audit

import (
	"context"
	"testing"
)

// discardSink counts records and keeps none.
type discardSink struct{ n int }

func (d *discardSink) Write(_ context.Context, recs []Record) error { d.n += len(recs); return nil }
func (d *discardSink) Close() error                                 { return nil }

// BenchmarkAppend measures Append with a MemorySink behind it (emptied now
// and then, outside the timer, so that memory stays bounded).
func BenchmarkAppend(b *testing.B) {
	mem := NewMemorySink()
	l := NewLog(LogConfig{Writer: "bench"}, nil, nil, mem)
	r := sample(5)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Append(r)
		if i++; i%(1<<16) == 0 {
			b.StopTimer()
			if err := l.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			mem.mu.Lock()
			mem.recs = nil
			mem.mu.Unlock()
			b.StartTimer()
		}
	}
	if err := l.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppendParallel measures Append from many goroutines at once.
func BenchmarkAppendParallel(b *testing.B) {
	l := NewLog(LogConfig{Writer: "bench"}, nil, nil, &discardSink{})
	r := sample(5)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Append(r)
		}
	})
	if err := l.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRedisSink measures one Write of a batch of 256 records (one
// pipeline) to a real redis-server.
func BenchmarkRedisSink(b *testing.B) {
	const batch = 256
	c, key := newRedis(b)
	s := NewRedisSink(c, key, 10000)
	recs := buildChain(b, "bench", batch)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkVerify measures Verify of 10,000 records of two writers.
func BenchmarkVerify(b *testing.B) {
	recs := interleave(buildChain(b, "w1", 5000), buildChain(b, "w2", 5000))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
}

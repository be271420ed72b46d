package memstore_test

import (
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/clock"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(t *testing.T) (approval.Store, func(time.Duration)) {
		clk := clock.NewFake(time.Now())
		return memstore.New(memstore.Options{Clock: clk}), clk.Advance
	}})
}

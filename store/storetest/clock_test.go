package storetest

import (
	"sync"
	"testing"
	"time"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Advance(time.Minute) }()
	}
	wg.Wait()
	if want := start.Add(10 * time.Minute); !c.Now().Equal(want) {
		t.Fatalf("after ten advances Now = %v, want %v", c.Now(), want)
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("after Set Now = %v, want %v", c.Now(), start)
	}
}

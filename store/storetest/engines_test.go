package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Run runs a test once per engine, and Open inside it, in nested subtests
// too, opens that engine's store.
func TestRunOpensEachEngine(t *testing.T) {
	var opened []string
	record := func(name string) Engine {
		return Engine{Name: name, Open: func(tb testing.TB, o Options) *store.DB {
			opened = append(opened, name+" for "+tb.Name())
			return openBolt(tb, o)
		}}
	}
	saved := Engines
	Engines = []Engine{record("first"), record("second")}
	t.Cleanup(func() { Engines = saved })
	var ran []string
	Run(t, func(t *testing.T) {
		ran = append(ran, t.Name())
		Open(t)
		t.Run("nested", func(t *testing.T) { Open(t) })
	})
	n := t.Name()
	if want := []string{n + "/first", n + "/second"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
	want := []string{"first for " + n + "/first", "first for " + n + "/first/nested",
		"second for " + n + "/second", "second for " + n + "/second/nested"}
	if !slices.Equal(opened, want) {
		t.Fatalf("opened %v, want %v", opened, want)
	}
	// Outside Run, with no engine named in the environment, Open uses the
	// first engine; Use names another.
	t.Setenv("FLEETCAM_TEST_ENGINE", "")
	Open(t)
	if last := opened[len(opened)-1]; last != "first for "+n {
		t.Fatalf("outside Run opened %q", last)
	}
	Use(t, "second")
	Open(t)
	if last := opened[len(opened)-1]; last != "second for "+n {
		t.Fatalf("after Use opened %q", last)
	}
}

// Open gives a store on the clock it is handed, closed when the test ends.
func TestOpenUsesTheClock(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var db *store.DB
	t.Run("test", func(t *testing.T) {
		db = Open(t, WithClock(clock.Now))
		clock.Advance(time.Hour)
		if got := db.Now(); !got.Equal(clock.Now()) {
			t.Fatalf("store time %v, want %v", got, clock.Now())
		}
	})
	if err := db.View(t.Context(), func(*store.Tx) error { return nil }); err == nil {
		t.Fatal("the store is still open after its test ended")
	}
}

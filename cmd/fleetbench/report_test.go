package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The comparison sets each figure measured on both engines side by side
// with the range of its runs and PostgreSQL / bbolt; the JSON names the
// engine of every figure and keeps the runs.
func TestReportComparesEngines(t *testing.T) {
	var out bytes.Buffer
	r := &report{w: &out, engines: true}
	r.engine = engineBolt
	r.figure("purge", "day_purge_seconds", 2, "s")
	r.runs([]float64{2, 1.5, 3})
	r.figure("purge", "only_on_bbolt", 7, "s")
	r.engine = enginePostgres
	r.target("purge", "day_purge_seconds", 5, "s", false, 1)
	r.runs([]float64{5, 4, 6})
	r.compare()
	want := "purge  day_purge_seconds  2.00 s (1.50–3.00)  5.00 s (4.00–6.00)               2.50×"
	if !strings.Contains(out.String(), want) {
		t.Errorf("comparison lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "only_on_bbolt") {
		t.Errorf("a figure of one engine is in the comparison:\n%s", out.String())
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.writeJSON(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Results []result }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 3 || got.Results[2].Engine != enginePostgres || len(got.Results[2].Runs) != 3 ||
		got.Results[2].Met == nil || *got.Results[2].Met || len(got.Results[1].Runs) != 0 {
		t.Errorf("JSON results: %s", raw)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// table is one part's result table, printed with aligned columns.
type table struct {
	title string
	cols  []string
	rows  [][]string
	notes []string
	// left is how many leading columns are aligned left (at least the first).
	left int
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) note(format string, a ...any) { t.notes = append(t.notes, fmt.Sprintf(format, a...)) }

func (t *table) print(w io.Writer) {
	width := make([]int, len(t.cols))
	for i, c := range t.cols {
		width[i] = len(c)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := width[i] - len([]rune(c))
			if i < max(t.left, 1) {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, "  "+strings.TrimRight(b.String(), " "))
	}
	fmt.Fprintf(w, "\n%s\n", t.title)
	line(t.cols)
	sep := make([]string, len(t.cols))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	for _, n := range t.notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

// result is one figure, for the JSON report and target checks.
type result struct {
	Part string `json:"part"`
	Name string `json:"name"`
	// Engine is the storage engine fleetcam ran on (bbolt, postgres), or
	// mosquitto for the baseline's own figures.
	Engine string  `json:"engine"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	// Met is set when the figure has a target.
	Met *bool `json:"met,omitempty"`
	// Runs are the values of each window or run when Value is their median.
	Runs []float64 `json:"runs,omitempty"`
}

// report collects the tables and figures of a run.
type report struct {
	w       io.Writer
	results []result
	skipped map[string]string
	started time.Time
	// engine is the storage engine of the part running now; its figures
	// carry it.
	engine string
	// engines is set when the parts run on more than one engine: tables
	// then name theirs.
	engines bool
}

// table prints t, its title naming the engine when the run compares engines.
func (r *report) table(t *table) {
	if r.engines && (r.engine == engineBolt || r.engine == enginePostgres) {
		t.title += " — on " + engineTitle(r.engine)
	}
	t.print(r.w)
}

// figure records a value without a target.
func (r *report) figure(part, name string, v float64, unit string) {
	r.results = append(r.results, result{Part: part, Name: name, Engine: r.engine, Value: v, Unit: unit})
}

// target records a value against a target: at least (atLeast) or at most
// the given bound. It returns the verdict for the tables.
func (r *report) target(part, name string, v float64, unit string, atLeast bool, bound float64) string {
	met := v <= bound
	rule := "≤ " + num(bound)
	if atLeast {
		met, rule = v >= bound, "≥ "+num(bound)
	}
	r.results = append(r.results, result{Part: part, Name: name, Engine: r.engine, Value: v, Unit: unit, Target: rule + " " + unit, Met: &met})
	if met {
		return "met (" + rule + ")"
	}
	return "MISSED (" + rule + ")"
}

// runs attaches the value of each window or run to the figure recorded
// last, whose value is their median.
func (r *report) runs(vs []float64) {
	if len(r.results) > 0 && len(vs) > 1 {
		r.results[len(r.results)-1].Runs = vs
	}
}

// withRange formats a figure with the range of its runs, when it has some.
func (x result) withRange() string {
	s := num(x.Value) + " " + x.Unit
	if len(x.Runs) > 1 {
		s += " (" + num(slices.Min(x.Runs)) + "–" + num(slices.Max(x.Runs)) + ")"
	}
	return s
}

// skip records that a part did not run and why (on the engine running
// now, when the run compares engines).
func (r *report) skip(part, why string) {
	if r.skipped == nil {
		r.skipped = map[string]string{}
	}
	key := part
	if r.engines && (r.engine == engineBolt || r.engine == enginePostgres) {
		key += "/" + r.engine
	}
	r.skipped[key] = why
	fmt.Fprintf(r.w, "\n%s: skipped: %s\n", key, why)
}

// value returns a figure recorded on engine.
func (r *report) value(part, name, engine string) (float64, bool) {
	x, ok := r.result(part, name, engine)
	return x.Value, ok
}

// result returns the figure recorded on engine.
func (r *report) result(part, name, engine string) (result, bool) {
	for _, x := range r.results {
		if x.Part == part && x.Name == name && x.Engine == engine {
			return x, true
		}
	}
	return result{}, false
}

// compare prints every figure recorded on both engines side by side, with
// PostgreSQL / bbolt.
func (r *report) compare() {
	t := &table{title: "bbolt beside PostgreSQL (the same run)", cols: []string{"part", "figure", "bbolt", "PostgreSQL", "PostgreSQL / bbolt"}, left: 2}
	for _, x := range r.results {
		if x.Engine != engineBolt {
			continue
		}
		pg, ok := r.result(x.Part, x.Name, enginePostgres)
		if !ok {
			continue
		}
		t.add(x.Part, x.Name, x.withRange(), pg.withRange(), ratio(pg.Value, x.Value))
	}
	if len(t.rows) == 0 {
		return
	}
	t.note("figures of the same part on each engine, measured one after the other in this run; medians, with the range of the windows or runs in brackets")
	t.print(r.w)
}

// summary prints every figure that has a target.
func (r *report) summary() {
	t := &table{title: "Targets", cols: []string{"part", "engine", "figure", "value", "target", "verdict"}, left: 3}
	for _, x := range r.results {
		if x.Met == nil {
			continue
		}
		verdict := "met"
		if !*x.Met {
			verdict = "MISSED"
		}
		t.add(x.Part, x.Engine, x.Name, num(x.Value)+" "+x.Unit, x.Target, verdict)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.note("total bench time %s; load average at the end %s", time.Since(r.started).Round(time.Second),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	t.print(r.w)
}

// writeJSON saves the figures for tools and tests.
func (r *report) writeJSON(path string) error {
	raw, err := json.MarshalIndent(struct {
		Results []result          `json:"results"`
		Skipped map[string]string `json:"skipped,omitempty"`
	}{r.results, r.skipped}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// num formats a figure with a sensible number of digits.
func num(v float64) string {
	switch {
	case v >= 100 || v <= -100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10 || v <= -10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// msf formats a duration in milliseconds.
func msf(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms" }

// ms is a duration in milliseconds as a number.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// ratio formats a/b, or "–" without a baseline.
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
			if i == 0 {
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
	Part   string  `json:"part"`
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	// Met is set when the figure has a target.
	Met *bool `json:"met,omitempty"`
}

// report collects the tables and figures of a run.
type report struct {
	w       io.Writer
	results []result
	skipped map[string]string
	started time.Time
}

func (r *report) table(t *table) { t.print(r.w) }

// figure records a value without a target.
func (r *report) figure(part, name string, v float64, unit string) {
	r.results = append(r.results, result{Part: part, Name: name, Value: v, Unit: unit})
}

// target records a value against a target: at least (atLeast) or at most
// the given bound. It returns the verdict for the tables.
func (r *report) target(part, name string, v float64, unit string, atLeast bool, bound float64) string {
	met := v <= bound
	rule := "≤ " + num(bound)
	if atLeast {
		met, rule = v >= bound, "≥ "+num(bound)
	}
	r.results = append(r.results, result{Part: part, Name: name, Value: v, Unit: unit, Target: rule + " " + unit, Met: &met})
	if met {
		return "met (" + rule + ")"
	}
	return "MISSED (" + rule + ")"
}

// skip records that a part did not run and why.
func (r *report) skip(part, why string) {
	if r.skipped == nil {
		r.skipped = map[string]string{}
	}
	r.skipped[part] = why
	fmt.Fprintf(r.w, "\n%s: skipped: %s\n", part, why)
}

// value returns a recorded figure.
func (r *report) value(part, name string) (float64, bool) {
	for _, x := range r.results {
		if x.Part == part && x.Name == name {
			return x.Value, true
		}
	}
	return 0, false
}

// summary prints every figure that has a target.
func (r *report) summary() {
	t := &table{title: "Targets", cols: []string{"part", "figure", "value", "target", "verdict"}}
	for _, x := range r.results {
		if x.Met == nil {
			continue
		}
		verdict := "met"
		if !*x.Met {
			verdict = "MISSED"
		}
		t.add(x.Part, x.Name, num(x.Value)+" "+x.Unit, x.Target, verdict)
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

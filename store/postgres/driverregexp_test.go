package postgres

import (
	"context"
	"regexp"
	"testing"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// driverNames are names the expressions of TestDriverRegexpsMatchAsGo are
// tried on: cases, accents, folds outside ASCII, newlines and punctuation.
var driverNames = []string{
	"", "Ann", "ann", "ANNE", "Joan", "Maria", "O'Brien", "jon", "j\nn", "Émile", "émile", "Strasse",
	"Straße", "Kelvin", "\u212aelvin", "b\na", "a\nb", "abc def", "123", "Ǆemal", "ǅemal", "ǆemal", "a.b",
	"x$y", "-", "]", "😀 smile", "aa", "Ελένη", "ΕΛΈΝΗ", "ann_b", "ann-b", "\tTab", "a\\b", "ſam", "Sam",
}

// driverPatterns are expressions as the API compiles them ((?i) and the
// caller's text), and some without (?i).
var driverPatterns = []string{
	"", "^a", "a$", "^$", "ann", "^ANN$", "o'br", "j.n", "(?s)j.n", "a|b", "^(jo|ma)", "an+e", "an*", "an?e$",
	"a{2}", "n{1,2}", "n{2,}", "[a-c]", "[^a-z]", `\d`, `\w+\s\w+`, `\bann`, `ann\b`, `\Bnn`, `(?m)^b`, `(?m)a$`,
	"é", "É", "straße", "STRASSE", "ǆ", "k", `\pL+$`, `\p{Greek}`, `[[:alpha:]]+`, "x*", "(a)(b)?", `\.`, `\$`,
	`[\-]`, `[a\]]`, `\Qa.b\E`, "(?U)a+", "a{0}", "(?:^|x)y", `\x{1F600}`, `[^\x00-\x{10FFFF}]`, `\Aa`, `a\z`,
	`[\\]`, "^.{3}$", "^.{4,5}$", `(?-s:.)+`, `\t`, `[[:^alpha:]]`, `\PL`, "s", "^(?:)$", "a||b", `(?i:É)mile`,
	"(?m)$", "(?m)^$", `\b`, `\B`, "(a*)*", "(?:a+|b)+$", "[a-zA-Z]{2,3}",
}

// TestDriverRegexpsMatchAsGo runs each translated name expression in
// PostgreSQL over every name and expects the names Go's regexp matches.
func TestDriverRegexpsMatchAsGo(t *testing.T) {
	t.Parallel()
	e := openEngine(t, pgtest.Database(t, ""))
	ctx := context.Background()
	for _, p := range driverPatterns {
		for _, expr := range []string{"(?i)" + p, p} {
			re := regexp.MustCompile(expr)
			pg, ok := pgRegexp(re.String())
			if !ok {
				t.Errorf("%q has no PostgreSQL expression", expr)
				continue
			}
			rows, err := e.pool.Query(ctx, `SELECT n, n ~ $1 FROM unnest($2::text[]) AS n`, pg, driverNames)
			if err != nil {
				t.Errorf("%q as %q: %v", expr, pg, err)
				continue
			}
			for rows.Next() {
				var name string
				var match bool
				if err := rows.Scan(&name, &match); err != nil {
					t.Fatal(err)
				}
				if want := re.MatchString(name); match != want {
					t.Errorf("%q as %q on %q: PostgreSQL says %v, Go %v", expr, pg, name, match, want)
				}
			}
			if err := rows.Err(); err != nil {
				t.Errorf("%q as %q: %v", expr, pg, err)
			}
		}
	}
}

// TestDriverRegexpsPostgreSQLCannotRun are Go expressions with no
// translation: counts beyond PostgreSQL's limit.
func TestDriverRegexpsPostgreSQLCannotRun(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"a{300}", "(?i)b{2,256}", "a{256,}"} {
		if pg, ok := pgRegexp(regexp.MustCompile(expr).String()); ok {
			t.Errorf("%q translated to %q; want no translation", expr, pg)
		}
	}
}

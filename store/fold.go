package store

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names compare ignoring case in one way on every engine: two names are
// the same but for case exactly when strings.EqualFold says so (Unicode
// simple case folding, character by character), and a case-insensitive
// order is the order of their FoldCase keys, byte by byte, which is the
// order of their characters' code points. An engine that filters or sorts
// in its query does it on keys FoldCase computed, stored with the record
// (PostgreSQL: drivers.first_name_folded and last_name_folded,
// devices.name_folded), never with a case mapping of its own: SQL's
// lower() depends on the database's locale (the C locale folds ASCII
// only), and no locale folds as Go does.
//
// The stored keys are only as current as the Unicode tables of the Go
// release that computed them: TestFoldCaseIsPinned fails when a release
// changes a key, and the keys stored then need a migration that computes
// them again.

// FoldCase is the key of s under which names compare ignoring case: each
// character replaced by one representative of the characters it equals
// ignoring case (its lower case where that is one of them). FoldCase(a) ==
// FoldCase(b) exactly when strings.EqualFold(a, b); a contains b ignoring
// case exactly when FoldCase(a) contains FoldCase(b).
func FoldCase(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// ContainsFold reports whether s contains substr ignoring case, as
// FoldCase compares.
func ContainsFold(s, substr string) bool {
	return strings.Contains(FoldCase(s), FoldCase(substr))
}

// CompareFold orders a and b ignoring case: by their FoldCase keys.
func CompareFold(a, b string) int {
	return strings.Compare(FoldCase(a), FoldCase(b))
}

// foldRune is r's representative among the characters unicode.SimpleFold
// cycles through from r (the characters strings.EqualFold takes for r):
// the lower case of the cycle's upper case when that is in the cycle, else
// the cycle's smallest character. It is computed from the cycle's smallest
// character, so every character of the cycle gets the same one.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	lower := unicode.ToLower(unicode.ToUpper(least))
	for f := unicode.SimpleFold(least); ; f = unicode.SimpleFold(f) {
		if f == lower {
			return lower
		}
		if f == least {
			return least
		}
	}
}

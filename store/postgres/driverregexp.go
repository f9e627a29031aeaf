package postgres

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// The API's name filters are Go regular expressions (RE2 syntax); SQL's ~
// runs PostgreSQL's (Spencer's AREs), whose syntax differs ((?i) only at the
// start, \b a backspace, . matching a newline, …). pgRegexp rewrites the
// parsed Go expression in the part of the ARE syntax whose meaning is
// plain: every character as a code point escape, case folding spelled out
// as the classes Go folds to, anchors and word boundaries as PostgreSQL's
// \A, \Z and lookaround. Whether a name matches does not depend on
// greediness or captures, so those are dropped.

// pgMaxRepeat is the largest count PostgreSQL accepts in {m,n}.
const pgMaxRepeat = 255

// pgWordChar is Go's \w, ASCII only.
const pgWordChar = `[0-9A-Za-z_]`

// pgRegexp is the PostgreSQL regular expression that matches what the Go
// expression expr (as regexp.Compile reads it) matches; false when there is
// none this can write.
func pgRegexp(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !writePGRegexp(&b, re) {
		return "", false
	}
	return b.String(), true
}

func writePGRegexp(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString(`[^\u0001-\U0010FFFF]`) // only NUL, which no text holds
	case syntax.OpEmptyMatch:
		b.WriteString(`(?:)`)
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				writePGClass(b, foldOrbit(r))
			} else {
				writePGRune(b, r)
			}
		}
	case syntax.OpCharClass:
		writePGClass(b, re.Rune)
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\u000A]`)
	case syntax.OpAnyChar:
		b.WriteString(`.`) // PostgreSQL's . matches a newline too
	case syntax.OpBeginLine:
		b.WriteString(`(?:\A|(?<=\u000A))`)
	case syntax.OpEndLine:
		b.WriteString(`(?:\Z|(?=\u000A))`)
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\Z`)
	case syntax.OpWordBoundary:
		b.WriteString(`(?:(?<=` + pgWordChar + `)(?!` + pgWordChar + `)|(?<!` + pgWordChar + `)(?=` + pgWordChar + `))`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`(?:(?<=` + pgWordChar + `)(?=` + pgWordChar + `)|(?<!` + pgWordChar + `)(?!` + pgWordChar + `))`)
	case syntax.OpCapture:
		return writePGGroup(b, re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		if !writePGGroup(b, re.Sub[0]) {
			return false
		}
		b.WriteString(map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op])
	case syntax.OpRepeat:
		if re.Min > pgMaxRepeat || re.Max > pgMaxRepeat || !writePGGroup(b, re.Sub[0]) {
			return false
		}
		switch {
		case re.Max < 0:
			fmt.Fprintf(b, "{%d,}", re.Min)
		case re.Max == re.Min:
			fmt.Fprintf(b, "{%d}", re.Min)
		default:
			fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !writePGRegexp(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			if !writePGRegexp(b, sub) {
				return false
			}
		}
		b.WriteByte(')')
	default:
		return false
	}
	return true
}

// writePGGroup writes re as a non-capturing group.
func writePGGroup(b *strings.Builder, re *syntax.Regexp) bool {
	b.WriteString("(?:")
	if !writePGRegexp(b, re) {
		return false
	}
	b.WriteByte(')')
	return true
}

// writePGRune writes r as itself when it is an ASCII letter or digit, else
// as its code point escape.
func writePGRune(b *strings.Builder, r rune) {
	switch {
	case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		b.WriteRune(r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04X`, r)
	default:
		fmt.Fprintf(b, `\U%08X`, r)
	}
}

// writePGClass writes the class of the code point ranges lo₀, hi₀, lo₁, …
// (as syntax keeps them). NUL, which no text holds, is left out: a class
// of nothing else matches nothing.
func writePGClass(b *strings.Builder, ranges []rune) {
	var kept []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], 1), ranges[i+1]
		if lo <= hi {
			kept = append(kept, lo, hi)
		}
	}
	if len(kept) == 0 {
		b.WriteString(`[^\u0001-\U0010FFFF]`)
		return
	}
	if len(kept) == 2 && kept[0] == kept[1] {
		writePGRune(b, kept[0])
		return
	}
	b.WriteByte('[')
	for i := 0; i < len(kept); i += 2 {
		writePGRune(b, kept[i])
		if kept[i+1] != kept[i] {
			b.WriteByte('-')
			writePGRune(b, kept[i+1])
		}
	}
	b.WriteByte(']')
}

// foldOrbit is the class of the runes Go's case folding equates with r.
func foldOrbit(r rune) []rune {
	out := []rune{r, r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f, f)
	}
	return out
}

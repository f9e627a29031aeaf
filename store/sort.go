package store

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Sort orders a list. Key is one of the sort keys the list names (the
// empty key is the list's natural order, by id); Desc reverses the order.
// Records equal under the key fall in id order, reversed too with Desc, so
// an SQL engine answers with ORDER BY key, id (both ASC or both DESC).
type Sort struct {
	Key  string
	Desc bool
}

// sortKeys maps each sort key of one record type to its comparison.
type sortKeys[T any] map[string]func(a, b *T) int

// sortPage sorts all by s, breaking ties with id, and returns the page p of
// them and their total. A key not in keys is ErrInvalid.
func sortPage[T any](all []T, s Sort, keys sortKeys[T], id func(*T) int64, p Page) ([]T, int, error) {
	var by func(a, b *T) int
	if s.Key != "" {
		var found bool
		if by, found = keys[s.Key]; !found {
			return nil, 0, fmt.Errorf("sort key %q is not one of %s: %w", s.Key,
				strings.Join(slices.Sorted(maps.Keys(keys)), ", "), ErrInvalid)
		}
	}
	slices.SortFunc(all, func(a, b T) int {
		r := cmp.Compare(id(&a), id(&b))
		if by != nil {
			r = cmp.Or(by(&a, &b), r)
		}
		if s.Desc {
			return -r
		}
		return r
	})
	page, total := Paginate(all, p)
	return page, total, nil
}

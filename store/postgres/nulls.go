package postgres

// Conversions between the store's zero values and SQL NULL: what every
// record group's SQL needs.

// nullZero is v as a query argument, NULL for its zero value: the columns
// of a member the record may lack are NULL rather than 0 or an empty string.
func nullZero[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// zeroNull is the value of a nullable column scanned into p: the zero
// value for NULL.
func zeroNull[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

package store

import (
	"strings"
	"unicode"
)

// MetricLabel turns a record name of the API's lowerCamel style
// (auditLogs, systemMessages) into the snake_case every fleetcam metric
// label value is written in (audit_logs, system_messages), so that one
// metric never mixes the two styles.
func MetricLabel(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

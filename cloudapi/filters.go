package cloudapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// A list filter that takes one of a fixed set of values is read by
// queryEnum: left out it does not filter, but given empty or with a value
// outside the set it is a 400 naming the filter and listing the set, never
// a silent "no filter".

// queryEnum reads the optional query parameter name, one of allowed;
// "" means it was left out.
func queryEnum(c *gin.Context, name string, allowed ...string) (string, error) {
	v, given := c.GetQuery(name)
	if !given {
		return "", nil
	}
	if !slices.Contains(allowed, v) {
		return "", badField(name, fmt.Sprintf("must be one of %s, not %s", strings.Join(allowed, ", "), quoteShort(v)))
	}
	return v, nil
}

// queryEnumOr is queryEnum with a default for a parameter left out.
func queryEnumOr(c *gin.Context, name, def string, allowed ...string) (string, error) {
	v, err := queryEnum(c, name, allowed...)
	if v == "" && err == nil {
		v = def
	}
	return v, err
}

package configs

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// checkYAML walks a parsed configuration file against Config and reports
// the first setting that is unknown or does not hold a value of its type,
// by its dotted name and the form expected, such as
// "http.requestTimeout must be a duration such as 30s or 5m (got 30)".
// The YAML decoder's own errors name Go types instead of settings.
func checkYAML(doc *yaml.Node) error {
	if doc.Kind == 0 { // an empty file
		return nil
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil
		}
		doc = doc.Content[0]
	}
	return checkNode(doc, reflect.TypeOf(Config{}), "")
}

var durationType = reflect.TypeOf(time.Duration(0))

func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	name := path
	if name == "" {
		name = "the file"
	}
	if t.Kind() == reflect.Struct {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s must be a mapping of settings", n.Line, name)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			field, ok := fieldByTag(t, key.Value)
			setting := key.Value
			if path != "" {
				setting = path + "." + key.Value
			}
			if !ok {
				return fmt.Errorf("line %d: unknown setting %s (configs/fleetcam.yaml lists them all)", key.Line, setting)
			}
			if err := checkNode(val, field.Type, setting); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode {
		for _, item := range n.Content {
			if err := checkNode(item, t.Elem(), path+" item"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %s must be %s (got %s)", n.Line, path, expectedForm(t), shown(n))
	}
	return nil
}

// fieldByTag finds the field of struct t whose yaml name is key.
func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// expectedForm describes the values a setting of type t takes.
func expectedForm(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 30s or 5m"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice:
		return "a list such as [a, b]"
	}
	return "a single value"
}

// shown is how a value appears in an error: the scalar, or its kind.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "an alias"
}

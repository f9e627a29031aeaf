package cloudapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Request bodies are read by decode, which checks rules encoding/json
// does not: a body must be valid UTF-8 (encoding/json replaces bad bytes
// silently), a member name must match exactly (encoding/json also takes one
// that differs in case), a member given twice in one object is refused
// (encoding/json keeps the last one silently), and null is refused where the body's type
// has no null (encoding/json reads it as "leave as is", so a null body or
// list would empty what a replace call stores). A struct field tagged
// `nullable:"true"` accepts null; json.RawMessage and interface members
// are left to their handler. No string may contain the NUL character,
// which no store keeps in text.

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// checkBody walks raw, a body encoding/json has already decoded into a
// value of type t, and returns a 400 naming the member that breaks a rule.
func checkBody(raw []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := bodyWalker{dec: dec}
	if err := w.value(t, "", false); err != nil {
		return err
	}
	return nil
}

type bodyWalker struct {
	dec *json.Decoder
}

// value walks one JSON value read into t at path; t nil means anything
// goes (only duplicates are checked).
func (w *bodyWalker) value(t reflect.Type, path string, nullable bool) error {
	tok, err := w.dec.Token()
	if err != nil {
		return nil // decode has already accepted the body
	}
	t = elemOf(t)
	if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
		return badField(orBody(path), "must not contain the NUL character (\\u0000)")
	}
	switch tok {
	case json.Delim('{'):
		return w.object(t, path)
	case json.Delim('['):
		return w.array(t, path)
	case nil:
		if t == nil || nullable || t.Kind() == reflect.Interface || t == rawMessageType {
			return nil
		}
		if path == "" {
			return badField("body", "must be "+article(jsonKind(t.Kind().String()))+", not null")
		}
		return badField(path, "must not be null: leave it out or give a value")
	}
	return nil
}

// orBody is path, or "body" for the body itself.
func orBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// elemOf is the type a JSON value is read into: pointers are followed,
// and a type that reads itself (or a raw message) has no known members.
func elemOf(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// opaque reports whether the members of a value of t are not ours to check.
func opaque(t reflect.Type) bool {
	return t == nil || t == rawMessageType || t.Kind() == reflect.Interface ||
		t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

func (w *bodyWalker) object(t reflect.Type, path string) error {
	var fields map[string]bodyField
	switch {
	case opaque(t):
		t = nil
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		t = t.Elem()
	default:
		t = nil
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		if strings.IndexByte(key, 0) >= 0 {
			return badField(orBody(path), "must not have a member name with the NUL character (\\u0000)")
		}
		name, member, nullable := key, t, false
		if fields != nil {
			f, known := lookupField(fields, key)
			if !known {
				return nil // decode has refused unknown members already
			}
			if f.name != key {
				// encoding/json also takes a name that differs only in case.
				return badField(joinPath(path, key), "is not a known field (member names are case-sensitive: "+f.name+")")
			}
			name, member, nullable = f.name, f.typ, f.nullable
		}
		if seen[name] {
			return badField(joinPath(path, key), "is given more than once")
		}
		seen[name] = true
		if err := w.value(member, joinPath(path, key), nullable); err != nil {
			return err
		}
	}
	_, _ = w.dec.Token() // the closing brace
	return nil
}

func (w *bodyWalker) array(t reflect.Type, path string) error {
	if opaque(t) || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
		t = nil
	} else {
		t = t.Elem()
	}
	for i := 0; w.dec.More(); i++ {
		if err := w.value(t, path+"["+strconv.Itoa(i)+"]", false); err != nil {
			return err
		}
	}
	_, _ = w.dec.Token() // the closing bracket
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// bodyField is a member of a JSON object read into a struct.
type bodyField struct {
	name     string
	typ      reflect.Type
	nullable bool
}

// fieldsOf lists the JSON members of struct t by name, with the members
// of embedded structs promoted as encoding/json does.
func fieldsOf(t reflect.Type) map[string]bodyField {
	out := map[string]bodyField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if et := elemOf(f.Type); et.Kind() == reflect.Struct {
				for k, v := range fieldsOf(et) {
					if _, own := out[k]; !own {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = bodyField{name: name, typ: f.Type, nullable: f.Tag.Get("nullable") == "true"}
	}
	return out
}

// lookupField finds the member key names like encoding/json does: an
// exact match first, else one that differs only in case.
func lookupField(fields map[string]bodyField, key string) (bodyField, bool) {
	if f, ok := fields[key]; ok {
		return f, true
	}
	for name, f := range fields {
		if strings.EqualFold(name, key) {
			return f, true
		}
	}
	return bodyField{}, false
}

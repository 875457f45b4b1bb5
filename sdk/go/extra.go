package tollgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Extra holds JSON fields a chat type does not model: provider-specific request parameters to send,
// and fields of an answer this SDK does not know yet. OpenAI-compatible APIs grow often; nothing
// the gateway or the provider sends is lost, and anything may be sent.
type Extra = map[string]json.RawMessage

// modelledFields caches, per struct type, the JSON names of its fields.
var modelledFields sync.Map

// jsonNames returns the JSON field names of a struct type, as encoding/json names them.
func jsonNames(t reflect.Type) map[string]bool {
	if cached, ok := modelledFields.Load(t); ok {
		return cached.(map[string]bool)
	}
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		field := t.Field(i)
		tag := field.Tag.Get("json")
		if tag == "-" || !field.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = field.Name
		}
		names[name] = true
	}
	modelledFields.Store(t, names)
	return names
}

// marshalWithExtra encodes v (a method-less copy of the caller's struct) and appends the extra fields.
// An extra field may also name a modelled field left unset (omitted from the encoding), to send a shape
// the struct does not model (a tool_choice of allowed_tools, a custom tool); one whose modelled field is
// set too is refused rather than sent twice or silently dropped.
func marshalWithExtra(v any, extra Extra) ([]byte, error) {
	base, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return base, err
	}
	modelled := jsonNames(reflect.TypeOf(v))
	var encoded map[string]json.RawMessage
	names := make([]string, 0, len(extra))
	for name := range extra {
		if modelled[name] {
			if encoded == nil {
				if err := json.Unmarshal(base, &encoded); err != nil {
					return nil, err
				}
			}
			if _, set := encoded[name]; set {
				return nil, fmt.Errorf("tollgate: field %q is set both as a field and in Extra: set it in one place", name)
			}
		}
		names = append(names, name)
	}
	// Sorted, so the same value always encodes to the same bytes.
	sort.Strings(names)
	var out bytes.Buffer
	out.Write(base[:len(base)-1])
	for i, name := range names {
		if i > 0 || len(base) > 2 {
			out.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		out.Write(key)
		out.WriteByte(':')
		value := extra[name]
		if len(value) == 0 {
			value = json.RawMessage("null")
		}
		if !json.Valid(value) {
			return nil, fmt.Errorf("tollgate: Extra field %q is not valid JSON", name)
		}
		out.Write(value)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// unmarshalWithExtra decodes data into v (a pointer to a method-less copy of the caller's struct) and
// returns the fields v does not model, nil when there are none.
func unmarshalWithExtra(data []byte, v any) (Extra, error) {
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	modelled := jsonNames(reflect.TypeOf(v).Elem())
	var extra Extra
	for name, value := range all {
		if modelled[name] {
			continue
		}
		if extra == nil {
			extra = Extra{}
		}
		extra[name] = value
	}
	return extra, nil
}

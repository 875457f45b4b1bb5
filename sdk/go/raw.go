package tollgate

import "encoding/json"

// Raw keeps the JSON object an answer was decoded from, so fields the gateway adds after this SDK
// was written stay reachable: every management API type embeds it, and RawJSON returns the object.
type Raw struct{ data json.RawMessage }

// RawJSON is the JSON object exactly as the gateway sent it (nil for a value built in Go).
func (r Raw) RawJSON() json.RawMessage { return r.data }

// decodeKeepingRaw decodes data into v (a pointer to a method-less copy of the caller's type, so
// json.Unmarshal does not recurse into the caller's UnmarshalJSON) and keeps data in raw.
func decodeKeepingRaw(data []byte, v any, raw *Raw) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	raw.data = append(json.RawMessage(nil), data...)
	return nil
}

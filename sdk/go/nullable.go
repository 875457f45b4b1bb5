package tollgate

import (
	"bytes"
	"encoding/json"
)

// Nullable is a value in an update that may also be set to JSON null, for fields where null means
// something (no budget, no team, no expiry). In an update struct, a nil *Nullable leaves the field
// as it is, Null[T]() clears it, and Value(v) sets it.
type Nullable[T any] struct {
	value T
	set   bool
}

// Value sets a field to v in an update.
func Value[T any](v T) *Nullable[T] { return &Nullable[T]{value: v, set: true} }

// Null sets a field to null in an update.
func Null[T any]() *Nullable[T] { return &Nullable[T]{} }

// Get returns the value and whether there is one (false for null).
func (n Nullable[T]) Get() (T, bool) { return n.value, n.set }

// MarshalJSON writes the value, or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.set {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON reads a value, or null.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*n = Nullable[T]{}
		return nil
	}
	var value T
	if err := json.Unmarshal(data, &value); err != nil {
		return err
	}
	*n = Nullable[T]{value: value, set: true}
	return nil
}

// Ptr returns a pointer to v, for optional fields in create requests: Budget: tollgate.Ptr(25.0).
func Ptr[T any](v T) *T { return &v }

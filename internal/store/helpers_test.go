package store_test

import (
	"encoding/json"
)

// canonicalJSON re-encodes a JSON document with sorted keys and no spacing.
func canonicalJSON(b []byte) json.RawMessage {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

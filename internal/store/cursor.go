package store

import (
	"encoding/base64"
	"encoding/json"
)

// encodeToken is a page cursor as clients carry it (NextCursor): c's JSON in unpadded URL-safe
// base64, opaque to them.
func encodeToken(c any) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reads a cursor encodeToken wrote into c and reports whether s was one; what its
// fields must hold, each decoder checks.
func decodeToken(s string, c any) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && json.Unmarshal(b, c) == nil
}

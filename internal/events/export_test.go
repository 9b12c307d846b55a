package events

// DecodeV1 is Decode with encoding/json on the fast path, as before json/v2: the reference the
// fuzz targets hold Decode to.
func DecodeV1(b []byte, opts ...DecodeOption) (*Envelope, error) {
	return Decode(b, append(opts, func(o *decodeOptions) { o.unmarshal = unmarshalV1 })...)
}

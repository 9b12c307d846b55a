package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"
)

// DecodeV1 is Decode with encoding/json on the fast path, as before json/v2: the reference the
// fuzz targets hold Decode to.
func DecodeV1(b []byte, opts ...DecodeOption) (*Envelope, error) {
	return Decode(b, append(opts, func(o *decodeOptions) { o.unmarshal = unmarshalV1 })...)
}

// unmarshalV1 is encoding/json's reader as the fast path used it before json/v2: a Decoder
// (one validating scan) and nothing after the value.
func unmarshalV1(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

// ReadInOnePass says whether Decode reads msg's payload in the envelope's own pass
// (decodeOnePass) rather than reading data again.
func ReadInOnePass(msg []byte) bool {
	var env Envelope
	return decodeOnePass(bytes.TrimSpace(msg), &env) != nil
}

// DecodeTwoPass is Decode reading the payload again from data even when kind comes first (as
// before decodeOnePass), for the benchmarks to set beside it.
func DecodeTwoPass(b []byte, opts ...DecodeOption) (*Envelope, error) {
	return Decode(b, append(opts, func(o *decodeOptions) { o.unmarshal = unmarshalV2 })...)
}

// DecodeJSONv2 is Decode without handRead: json/v2 in one pass (decodeOnePass), then checkData.
func DecodeJSONv2(b []byte, opts ...DecodeOption) (*Envelope, error) {
	return Decode(b, append(opts, func(o *decodeOptions) { o.noHandRead = true })...)
}

// HandRead says whether Decode reads msg with handRead, at the receive time now.
func HandRead(msg []byte, now time.Time) bool {
	var env Envelope
	return handRead(bytes.TrimSpace(msg), &env, now) != nil
}

package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	"github.com/augceo/vibe/llm"
)

// hashVersion starts every hashed encoding, so that a change to the encoding
// below misses old recordings instead of matching them by accident.
const hashVersion = "vibe/replay/v1"

// Hash returns the hex SHA-256 of a canonical encoding of what req asks:
// its name, system text, messages (role and content, in order) and schema.
//
// Each field is written as its length and its bytes, so no two requests
// share an encoding. The schema is compacted (whitespace removed, property
// order kept: order is meaning, so a reordered schema is another request);
// bytes that are not JSON are hashed as they are.
func Hash(req *llm.Request) string {
	var b []byte
	field := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	field([]byte(hashVersion))
	field([]byte(req.Name))
	field([]byte(req.System))
	b = binary.AppendUvarint(b, uint64(len(req.Messages)))
	for _, m := range req.Messages {
		field([]byte(m.Role))
		field([]byte(m.Content))
	}
	var schema bytes.Buffer
	if err := json.Compact(&schema, req.Schema); err != nil {
		schema.Reset()
		schema.Write(req.Schema)
	}
	field(schema.Bytes())
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

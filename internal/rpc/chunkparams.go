package rpc

import (
	"bytes"
	"encoding/json/jsontext"
	"strconv"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/scan"
	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

// chunkParams are the params of file/upload/chunk. data is data_b64 as it stands
// in the frame (or unescaped, on the general path): undecoded, and not copied.
type chunkParams struct {
	uploadID string
	offset   int64
	data     []byte
}

// decodedChunkParams is the general path's view of the same params.
type decodedChunkParams struct {
	UploadID string  `json:"upload_id"`
	Offset   *int64  `json:"offset"`
	DataB64  *string `json:"data_b64"`
}

// readChunkParams reads file/upload/chunk params. A chunk frame is almost all
// data_b64 (1.4 MB for a 1 MiB chunk), so params written the plain way are read by
// plainChunkParams, which finds data_b64 with two memchr passes and copies nothing;
// everything else takes jsonrpc.DecodeParams and is answered exactly as any params
// are.
func readChunkParams(params jsontext.Value) (chunkParams, error) {
	if p, ok := plainChunkParams(params); ok {
		return p, nil
	}
	return decodeChunkParams(params)
}

// decodeChunkParams is the general path of readChunkParams.
func decodeChunkParams(params jsontext.Value) (chunkParams, error) {
	var p decodedChunkParams
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return chunkParams{}, err
	}
	switch {
	case p.UploadID == "":
		return chunkParams{}, missing("upload_id")
	case p.Offset == nil:
		return chunkParams{}, missing("offset")
	case p.DataB64 == nil:
		return chunkParams{}, missing("data_b64")
	}
	return chunkParams{uploadID: p.UploadID, offset: *p.Offset, data: []byte(*p.DataB64)}, nil
}

// plainChunkParams reads params that are an object of exactly the members
// upload_id (a non-empty string), offset (an integer that fits int64) and data_b64
// (a string), once each in any order, with no escape in any name or string. It
// reports false for anything else (another spelling, another member, an escape,
// another type), which the general path then answers. It relies on the frame having
// been validated whole by jsonrpc.Classify (valid JSON and UTF-8, no duplicate
// names): it recognises the plain shape, it does not validate JSON.
func plainChunkParams(b []byte) (chunkParams, bool) {
	var p chunkParams
	var seen [3]bool
	i := scan.Space(b, 0)
	if i == len(b) || b[i] != '{' {
		return p, false
	}
	i++
	for {
		name, j, ok := plainString(b, scan.Space(b, i))
		if !ok {
			return p, false
		}
		i = scan.Space(b, j)
		if i == len(b) || b[i] != ':' {
			return p, false
		}
		i = scan.Space(b, i+1)
		var k int
		switch string(name) {
		case "upload_id":
			var v []byte
			if v, i, ok = plainString(b, i); !ok || len(v) == 0 {
				return p, false
			}
			k, p.uploadID = 0, string(v)
		case "offset":
			if p.offset, i, ok = plainInt(b, i); !ok {
				return p, false
			}
			k = 1
		case "data_b64":
			if p.data, i, ok = plainString(b, i); !ok {
				return p, false
			}
			k = 2
		default:
			return p, false
		}
		if seen[k] {
			return p, false
		}
		seen[k] = true
		i = scan.Space(b, i)
		if i == len(b) {
			return p, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '}' || scan.Space(b, i+1) != len(b) {
			return p, false
		}
		return p, seen == [3]bool{true, true, true}
	}
}

// plainString reads the string at b[i:] when it has no escape, returning its
// contents and the index after its closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i == len(b) || b[i] != '"' {
		return nil, 0, false
	}
	n := bytes.IndexByte(b[i+1:], '"')
	if n < 0 {
		return nil, 0, false
	}
	s := b[i+1 : i+1+n : i+1+n]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	return s, i + n + 2, true
}

// plainInt reads the integer at b[i:]: digits with an optional minus, no fraction
// or exponent, within int64.
func plainInt(b []byte, i int) (int64, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	if j == start || j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, j, true
}

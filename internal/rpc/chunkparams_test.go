package rpc

import (
	"bytes"
	"encoding/json/jsontext"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
)

var chunkParamCases = []struct {
	params string
	plain  bool // read by plainChunkParams
}{
	{`{"upload_id":"upl_1","offset":0,"data_b64":"YWJj"}`, true},
	{` { "data_b64" : "" ,	"offset":-0 ,"upload_id":"u" } `, true},
	{`{"upload_id":"u","offset":9223372036854775807,"data_b64":"YQ=="}`, true},
	{`{"upload_id":"u","offset":-5,"data_b64":"YQ"}`, true},
	{`{"uploadId":"u","offset":0,"dataB64":"YWJj"}`, false},                     // the other spelling
	{`{"upload_id":"u","uploadId":"v","offset":0,"data_b64":"YWJj"}`, false},    // both spellings
	{`{"upload_id":"u","offset":0,"data_b64":"YWJj","extra":1}`, false},         // another member
	{`{"upload_id":"u","offset":0,"data_b64":"YW\u004aj"}`, false},              // an escape
	{`{"upload_id":"u","offset":0,"data_b64":"YW\/j"}`, false},                  //
	{`{"upload_\u0069d":"u","offset":0,"data_b64":"YWJj"}`, false},              // an escaped name
	{`{"upload_id":"u","offset":1.0,"data_b64":"YWJj"}`, false},                 // not an integer
	{`{"upload_id":"u","offset":1e3,"data_b64":"YWJj"}`, false},                 //
	{`{"upload_id":"u","offset":9223372036854775808,"data_b64":"YWJj"}`, false}, // past int64
	{`{"upload_id":"u","offset":"0","data_b64":"YWJj"}`, false},                 // a string
	{`{"upload_id":"","offset":0,"data_b64":"YWJj"}`, false},                    // empty id
	{`{"upload_id":7,"offset":0,"data_b64":"YWJj"}`, false},                     // not a string
	{`{"upload_id":"u","offset":0,"data_b64":null}`, false},                     // null
	{`{"upload_id":"u","data_b64":"YWJj"}`, false},                              // missing offset
	{`{"upload_id":"u","offset":0}`, false},                                     // missing data
	{`{"offset":0,"data_b64":"YWJj"}`, false},                                   // missing id
	{`{}`, false},
	{`[]`, false},
	{``, false},
}

func TestPlainChunkParamsReadExactlyWhatDecodeParamsReads(t *testing.T) {
	for _, c := range chunkParamCases {
		_, ok := plainChunkParams([]byte(c.params))
		if ok != c.plain {
			t.Errorf("plainChunkParams(%s): ok = %v, want %v", c.params, ok, c.plain)
		}
		checkChunkParams(t, []byte(c.params))
	}
}

// checkChunkParams: what the plain reader accepts, the general path reads alike.
func checkChunkParams(t *testing.T, params []byte) {
	t.Helper()
	fast, ok := plainChunkParams(params)
	if !ok {
		return
	}
	if env := jsonrpc.Classify([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":` + string(params) + `}`)); env.Request == nil {
		return // a frame the classifier refuses never reaches the handler
	}
	slow, err := decodeChunkParams(jsontext.Value(params))
	if err != nil || slow.uploadID != fast.uploadID || slow.offset != fast.offset || !bytes.Equal(slow.data, fast.data) {
		t.Errorf("%s: plain %+v, general %+v, %v", params, fast, slow, err)
	}
}

func FuzzPlainChunkParams(f *testing.F) {
	for _, c := range chunkParamCases {
		f.Add(c.params)
	}
	f.Add(`{"upload_id":"u","offset":0,"data_b64":"` + strings.Repeat("QUJD", 1000) + `"}`)
	f.Fuzz(func(t *testing.T, params string) { checkChunkParams(t, []byte(params)) })
}

package store

import (
	"bytes"
	"fmt"
	"strconv"
)

// A run of the replay log (update_runs) is stored one of two ways:
//
//   - plain: the updates' payloads joined by "\n";
//   - compact, when every payload is the same prefix, then its own seq in decimal,
//     then a rest: compactMark, the prefix, then "\n" and the rest of each update.
//     A session/update's params start {"sessionId":…,"turnId":…,"seq":, so a
//     streamed text chunk keeps only its type and text, less than half its bytes,
//     and every group commit writes (and every trim frees) that much less.
//
// A run of one update is always its payload as is. No plain run of several starts
// with compactMark: a payload that does is a run of its own (runLength), as one
// holding a newline is.
const compactMark = 0x01

// seqKey is what precedes the seq in a session/update's params.
var seqKey = []byte(`"seq":`)

// encodeRun returns the stored payload of a run of two updates or more.
func encodeRun(run []Update) []byte {
	if b := compactRun(run); b != nil {
		return b
	}
	size := len(run) - 1
	for _, u := range run {
		size += len(u.Payload)
	}
	payload := make([]byte, 0, size)
	for i, u := range run {
		if i > 0 {
			payload = append(payload, '\n')
		}
		payload = append(payload, u.Payload...)
	}
	return payload
}

// compactRun returns the compact form of run, or nil when its payloads do not
// share a prefix before their seqs.
func compactRun(run []Update) []byte {
	var num [20]byte
	first := run[0].Payload
	at := bytes.Index(first, append(seqKey, strconv.AppendUint(num[:0], run[0].Seq, 10)...))
	if at < 0 {
		return nil
	}
	prefix := first[:at+len(seqKey)]
	size := 1 + len(prefix)
	for _, u := range run {
		digits := strconv.AppendUint(num[:0], u.Seq, 10)
		if !bytes.HasPrefix(u.Payload, prefix) || !bytes.HasPrefix(u.Payload[len(prefix):], digits) {
			return nil
		}
		size += 1 + len(u.Payload) - len(prefix) - len(digits)
	}
	b := make([]byte, 0, size)
	b = append(append(b, compactMark), prefix...)
	for _, u := range run {
		b = append(b, '\n')
		b = append(b, u.Payload[len(prefix)+len(strconv.AppendUint(num[:0], u.Seq, 10)):]...)
	}
	return b
}

// decodeRun returns the payloads of the stored run first..last.
func decodeRun(payload []byte, first, last int64) ([][]byte, error) {
	if last == first {
		return [][]byte{payload}, nil
	}
	n := last - first + 1
	if len(payload) == 0 || payload[0] != compactMark {
		parts := bytes.Split(payload, []byte{'\n'})
		if int64(len(parts)) != n {
			return nil, fmt.Errorf("the stored run %d-%d holds %d updates", first, last, len(parts))
		}
		return parts, nil
	}
	prefix, rest, _ := bytes.Cut(payload[1:], []byte{'\n'})
	rests := bytes.Split(rest, []byte{'\n'})
	if int64(len(rests)) != n {
		return nil, fmt.Errorf("the stored run %d-%d holds %d updates", first, last, len(rests))
	}
	// One buffer for the run's payloads, each its own subslice.
	size := 0
	for _, r := range rests {
		size += len(prefix) + 20 + len(r)
	}
	buf := make([]byte, 0, size)
	parts := make([][]byte, len(rests))
	for i, r := range rests {
		start := len(buf)
		buf = append(buf, prefix...)
		buf = strconv.AppendInt(buf, first+int64(i), 10)
		buf = append(buf, r...)
		parts[i] = buf[start:len(buf):len(buf)]
	}
	return parts, nil
}

package store

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// A run of the replay log (update_runs) is stored one of three ways:
//
//   - plain: the updates' payloads joined by "\n";
//   - compact (written since issue 14), when every payload is a shared prefix, then
//     its own seq in decimal, then a shared middle, its own core and a shared
//     suffix: framedMark, then prefix, middle, suffix and each core, joined by "\n".
//     A session/update's params start {"sessionId":…,"turnId":…,"seq": and a
//     streamed text chunk's go on ,"type":"agent_message_chunk","text":" and end
//     "}, so all a chunk keeps is its text and a newline: about a twentieth of its
//     bytes, and every group commit writes (and every trim frees) that much less;
//   - compact as written before (compactMark): prefix, then "\n" and the rest after
//     each seq. Only read.
//
// A run of one update is always its payload as is. No plain run of several starts
// with either mark: a payload that does is a run of its own (runLength), as one
// holding a newline is.
const (
	compactMark = 0x01
	framedMark  = 0x02
)

// seqKey is what precedes the seq in a session/update's params.
var seqKey = []byte(`"seq":`)

// encodeRun returns the stored payload of a run of two updates or more, written
// over dst's array when it has room (the writer's scratch: SQLite copies what it
// binds).
func encodeRun(dst []byte, run []Update) []byte {
	if b := shapedRun(dst, run); b != nil {
		return b
	}
	if b := compactRun(dst, run); b != nil {
		return b
	}
	size := len(run) - 1
	for _, u := range run {
		size += len(u.Payload)
	}
	payload := slices.Grow(dst[:0], size)
	for i, u := range run {
		if i > 0 {
			payload = append(payload, '\n')
		}
		payload = append(payload, u.Payload...)
	}
	return payload
}

// compactRun returns the compact form of run (framedMark), or nil when its payloads
// do not share a prefix before their seqs. One pass finds what every payload's rest
// (what follows its seq) begins and ends with, the middle and the suffix; a second
// writes each one's core, what lies between.
func compactRun(dst []byte, run []Update) []byte {
	var num [20]byte
	first := run[0].Payload
	key := append(append(make([]byte, 0, len(seqKey)+20), seqKey...), strconv.AppendUint(num[:0], run[0].Seq, 10)...)
	at := bytes.Index(first, key)
	if at < 0 {
		return nil
	}
	prefix := first[:at+len(seqKey)]
	// The seqs of a run are consecutive (runLength): each one's digits are the
	// last one's plus one, counted in place.
	digits := strconv.AppendUint(num[:0], run[0].Seq, 10)
	middle := first[len(prefix)+len(digits):]
	suffix, shortest, cores := middle, len(middle), 0
	for i, u := range run {
		if i > 0 {
			digits = incDecimal(digits)
		}
		p := u.Payload
		if u.Seq != run[0].Seq+uint64(i) || !bytes.HasPrefix(p, prefix) || !bytes.HasPrefix(p[len(prefix):], digits) {
			return nil
		}
		r := p[len(prefix)+len(digits):]
		if !bytes.HasPrefix(r, middle) {
			n := 0
			for n < len(middle) && n < len(r) && middle[n] == r[n] {
				n++
			}
			middle = middle[:n]
		}
		if !bytes.HasSuffix(r, suffix) {
			n := 0
			for n < len(suffix) && n < len(r) && suffix[len(suffix)-1-n] == r[len(r)-1-n] {
				n++
			}
			suffix = suffix[len(suffix)-n:]
		}
		shortest = min(shortest, len(r))
		cores += len(r)
	}
	if len(middle)+len(suffix) > shortest { // they would overlap in the shortest rest
		suffix = suffix[len(suffix)-(shortest-len(middle)):]
	}
	b := slices.Grow(dst[:0], 3+len(prefix)+len(middle)+len(suffix)+cores+len(run)*(1-len(middle)-len(suffix)))
	b = append(append(b, framedMark), prefix...)
	b = append(append(b, '\n'), middle...)
	b = append(append(b, '\n'), suffix...)
	digits = strconv.AppendUint(num[:0], run[0].Seq, 10)
	for i, u := range run {
		if i > 0 {
			digits = incDecimal(digits)
		}
		r := u.Payload[len(prefix)+len(digits):]
		b = append(b, '\n')
		b = append(b, r[len(middle):len(r)-len(suffix)]...)
	}
	return b
}

// shapedRun returns the compact form of run (framedMark) when every update of it
// has the same Shape, or nil. Its parts are the shape's: each payload's core is
// found by the lengths of the parts and of its seq, its bytes are not compared
// (finding the parts, compactRun, was a twentieth of a streamed update's cost).
// A payload too short for its shape is not of it: nil, and compactRun decides.
func shapedRun(dst []byte, run []Update) []byte {
	sh := run[0].Shape
	if sh == nil {
		return nil
	}
	fixed := len(sh.Prefix) + len(sh.Middle) + len(sh.Suffix)
	size := 3 + fixed // room for all of it: each core is counted with its seq
	for _, u := range run {
		size += 1 + max(0, len(u.Payload)-fixed)
	}
	b := slices.Grow(dst[:0], size)
	b = append(append(b, framedMark), sh.Prefix...)
	b = append(append(b, '\n'), sh.Middle...)
	b = append(append(b, '\n'), sh.Suffix...)
	var num [20]byte
	digits := strconv.AppendUint(num[:0], run[0].Seq, 10)
	for i, u := range run {
		if i > 0 {
			digits = incDecimal(digits)
		}
		start := len(sh.Prefix) + len(digits) + len(sh.Middle)
		if u.Shape != sh || u.Seq != run[0].Seq+uint64(i) || len(u.Payload) < start+len(sh.Suffix) {
			return nil
		}
		b = append(append(b, '\n'), u.Payload[start:len(u.Payload)-len(sh.Suffix)]...)
	}
	return b
}

// incDecimal adds one to the decimal number d (ASCII digits, no sign) in place,
// growing it by a digit when it was all nines.
func incDecimal(d []byte) []byte {
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] != '9' {
			d[i]++
			return d
		}
		d[i] = '0'
	}
	return append([]byte{'1'}, d...)
}

// decodeRun returns the payloads of the stored run first..last.
func decodeRun(payload []byte, first, last int64) ([][]byte, error) {
	if last == first {
		return [][]byte{payload}, nil
	}
	n := last - first + 1
	if len(payload) == 0 || (payload[0] != compactMark && payload[0] != framedMark) {
		parts := bytes.Split(payload, []byte{'\n'})
		if int64(len(parts)) != n {
			return nil, fmt.Errorf("the stored run %d-%d holds %d updates", first, last, len(parts))
		}
		return parts, nil
	}
	var prefix, middle, suffix []byte
	var cores [][]byte
	if payload[0] == framedMark {
		parts := bytes.Split(payload[1:], []byte{'\n'})
		if int64(len(parts)) != n+3 {
			return nil, fmt.Errorf("the stored run %d-%d holds %d updates", first, last, len(parts)-3)
		}
		prefix, middle, suffix, cores = parts[0], parts[1], parts[2], parts[3:]
	} else {
		var rest []byte
		prefix, rest, _ = bytes.Cut(payload[1:], []byte{'\n'})
		cores = bytes.Split(rest, []byte{'\n'})
		if int64(len(cores)) != n {
			return nil, fmt.Errorf("the stored run %d-%d holds %d updates", first, last, len(cores))
		}
	}
	// One buffer for the run's payloads, each its own subslice.
	size := 0
	for _, c := range cores {
		size += len(prefix) + 20 + len(middle) + len(c) + len(suffix)
	}
	buf := make([]byte, 0, size)
	parts := make([][]byte, len(cores))
	for i, c := range cores {
		start := len(buf)
		buf = append(buf, prefix...)
		buf = strconv.AppendInt(buf, first+int64(i), 10)
		buf = append(buf, middle...)
		buf = append(buf, c...)
		buf = append(buf, suffix...)
		parts[i] = buf[start:len(buf):len(buf)]
	}
	return parts, nil
}

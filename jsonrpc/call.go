package jsonrpc

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"fmt"
	"strconv"
)

// Appender is a result that encodes itself: AppendJSON appends its JSON encoding to
// dst. A handler returns one for results whose shape never changes, to spare the
// reflection of encoding/json; it must append exactly one valid JSON value.
type Appender interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// appendResultOf appends the success response to id with result, encoded as the
// Handler documents.
func appendResultOf(dst []byte, id ID, result any) ([]byte, error) {
	switch r := result.(type) {
	case jsontext.Value:
		return AppendResult(dst, id, r), nil
	case Appender:
		dst = append(dst, `{"jsonrpc":"2.0","result":`...)
		dst, err := r.AppendJSON(dst)
		if err != nil {
			return nil, err
		}
		return appendID(dst, id), nil
	}
	// Encoded straight into the frame: json.Marshal would allocate the result and
	// AppendResult copy it again.
	w := appendWriter{append(dst, `{"jsonrpc":"2.0","result":`...)}
	if err := json.MarshalWrite(&w, result); err != nil {
		return nil, err
	}
	return appendID(w.b, id), nil
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (c *Conn) deliver(r *Response) {
	key := r.ID.key()
	c.pendingMu.Lock()
	ch, ok := c.pending[key]
	delete(c.pending, key)
	c.pendingMu.Unlock()
	if !ok {
		c.log.Info("ignored response with an unknown id", "id", shortID(r.ID))
		return
	}
	ch <- r
}

// Call sends a request to the peer and waits for its answer, ctx, or the end of the
// connection. A result is unmarshaled into result when result is non-nil; an explicit
// "result": null is a success. A peer's error object comes back as *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.CallSent(ctx, method, params, result, nil)
}

// CallSent is Call; sent, when not nil, is told the request's id once the request is
// on its way, so that the caller can name it to the peer later (ACP's
// $/cancel_request).
func (c *Conn) CallSent(ctx context.Context, method string, params, result any, sent func(ID)) error {
	p, err := encodeParams(params)
	if err != nil {
		return err
	}
	id := StringID("zc-out-" + strconv.FormatUint(c.nextID.Add(1)-1, 10))
	key := id.key()
	ch := make(chan *Response, 1)
	c.pendingMu.Lock()
	if c.closed.Load() {
		c.pendingMu.Unlock()
		return ErrClosed
	}
	c.pending[key] = ch
	c.pendingMu.Unlock()
	forget := func() {
		c.pendingMu.Lock()
		delete(c.pending, key)
		c.pendingMu.Unlock()
	}

	msg, err := AppendRequest(c.buffer(len(p)+len(method)), id, method, p)
	if err != nil {
		forget()
		return err
	}
	if err := c.out.push(msg, frameResponse, true, false); err != nil {
		forget()
		return err
	}
	if sent != nil {
		sent(id)
	}
	select {
	case r := <-ch:
		return decodeResult(r, result)
	case <-ctx.Done():
		forget()
		return ctx.Err()
	case <-c.inputDone:
		select { // an answer read just before the end still counts
		case r := <-ch:
			return decodeResult(r, result)
		default:
			return ErrClosed
		}
	}
}

func decodeResult(r *Response, result any) error {
	if r.Error != nil {
		return r.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("decoding the peer's result: %w", err)
	}
	return nil
}

func encodeParams(params any) (jsontext.Value, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case jsontext.Value:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding params: %w", err)
	}
	return b, nil
}

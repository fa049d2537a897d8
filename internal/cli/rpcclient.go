package cli

import (
	"bufio"
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
)

// callTimeout bounds one client command: connect, initialize and its call.
const callTimeout = 60 * time.Second

// rpcClient is the small NDJSON client the one-shot commands (config, pair) share:
// connect to the local endpoint, initialize, then one call at a time.
type rpcClient struct {
	conn     net.Conn
	r        *bufio.Reader
	endpoint string
	next     int64
}

// rpcError is an error answer from the daemon. Its text is the daemon's message, and
// its data when there is any.
type rpcError struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data"`
}

func (e *rpcError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// dialDaemon connects to the daemon of configDir ("" means ZEROCLAW_CONFIG_DIR or
// ~/.zeroclaw) and initializes the connection.
func dialDaemon(ctx context.Context, configDir string) (*rpcClient, error) {
	dirs, err := endpoint.ResolveDirs(configDir, nil)
	if err != nil {
		return nil, err
	}
	addr := endpoint.Address(dirs, nil)
	conn, err := endpoint.Dial(ctx, addr)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("no daemon is serving at %s; start one with `zeroclaw daemon`", addr)
		}
		return nil, fmt.Errorf("connecting to the daemon at %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c := &rpcClient{conn: conn, r: bufio.NewReader(conn), endpoint: addr}
	init := map[string]any{
		"protocolVersion": rpc.ProtocolVersion,
		"clientInfo":      map[string]string{"name": "zeroclaw", "version": rpc.ServerVersion},
	}
	if err := c.call("initialize", init, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *rpcClient) Close() error { return c.conn.Close() }

// call sends one request and waits for its answer, skipping notifications. The
// result is unmarshaled into result when it is not nil.
func (c *rpcClient) call(method string, params, result any) error {
	c.next++
	id := c.next
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	req, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		Method  string         `json:"method"`
		Params  jsontext.Value `json:"params"`
		ID      int64          `json:"id"`
	}{"2.0", method, p, id})
	if err != nil {
		return err
	}
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("sending %s to %s: %w", method, c.endpoint, err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("waiting for the answer to %s from %s: %w", method, c.endpoint, err)
		}
		var msg struct {
			Method string         `json:"method"`
			ID     jsontext.Value `json:"id"`
			Result jsontext.Value `json:"result"`
			Error  *rpcError      `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return fmt.Errorf("the daemon sent an unreadable line: %w", err)
		}
		if msg.Method != "" || string(msg.ID) != strconv.FormatInt(id, 10) {
			continue // a notification, or an answer that is not ours
		}
		if msg.Error != nil {
			return msg.Error
		}
		if result != nil {
			return json.Unmarshal(msg.Result, result)
		}
		return nil
	}
}

// withDaemon runs fn on a fresh connection to the daemon.
func withDaemon(configDir string, fn func(c *rpcClient) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := dialDaemon(ctx, configDir)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

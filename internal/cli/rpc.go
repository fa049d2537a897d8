package cli

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/version"
	"time"

	"github.com/spf13/cobra"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/endpoint"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
)

func rpcCmd() *cobra.Command {
	var configDir string
	var remote remoteFlags
	cmd := &cobra.Command{
		Use:   "rpc METHOD [JSON]",
		Short: "Call one JSON-RPC method of the running daemon and print its result",
		Long: `Connect to the running daemon, initialize, call METHOD with the params JSON (an
object or array; default {}), and print the result as JSON. On a JSON-RPC error the
error object ({"code","message","data"}) goes to stderr and the exit status is 1.
docs/protocol.md lists the methods.`,
		Example: `  zeroclaw rpc status
  zeroclaw rpc session/new '{"agentAlias":"default"}'
  zeroclaw rpc session/set '{"sessionId":"…","mode":"readonly","model":"gpt-4o","title":"Parser work"}'
  zeroclaw rpc models/list '{"agentAlias":"default"}'
  zeroclaw rpc session/compact '{"sessionId":"…","instructions":"keep the file names"}'
  zeroclaw rpc session/fork '{"sessionId":"…","title":"the other way"}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := jsontext.Value("{}")
			if len(args) == 2 {
				params = jsontext.Value(args[1])
				if err := params.Compact(); err != nil || (params[0] != '{' && params[0] != '[') {
					return fmt.Errorf("params must be a JSON object or array, got %q", args[1])
				}
			}
			return withClientFor(configDir, remote, rpcTimeout(args[0]), func(ctx context.Context, c *client.Client) error {
				var result jsontext.Value
				err := c.Call(ctx, args[0], params, &result)
				var e *client.Error
				if errors.As(err, &e) {
					return rpcErrorLine(args[0], e)
				}
				if err != nil {
					return err
				}
				if err := result.Indent(jsontext.WithIndent("  ")); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", result)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	remote.add(cmd.Flags())
	return cmd
}

// rpcErrorLine is the one-line error of a failed call: the method and the error
// object as JSON.
func rpcErrorLine(method string, e *client.Error) error {
	obj := struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data,omitzero"`
	}{e.Code, e.Message, e.Data}
	b, err := json.Marshal(obj)
	if err != nil {
		return e
	}
	return fmt.Errorf("%s failed: %s", method, b)
}

// callTimeout bounds one client command: connect, initialize and its call.
const callTimeout = 60 * time.Second

// rpcTimeout bounds `zeroclaw rpc METHOD`: callTimeout, but session/compact may
// take its whole deadline (session.CompactDeadline, 180 s) and then some.
func rpcTimeout(method string) time.Duration {
	if method == "session/compact" {
		return session.CompactDeadline + callTimeout
	}
	return callTimeout
}

// withClient runs fn on a fresh, initialized connection to the running daemon of
// configDir, or to the remote one the flags name; it never starts one. ctx bounds
// the whole command (callTimeout).
func withClient(configDir string, remote remoteFlags, fn func(ctx context.Context, c *client.Client) error) error {
	return withClientFor(configDir, remote, callTimeout, fn)
}

// withClientFor is withClient with the command bounded by timeout.
func withClientFor(configDir string, remote remoteFlags, timeout time.Duration, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := connect(ctx, configDir, remote)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// connect dials and initializes; ctx bounds only that.
func connect(ctx context.Context, configDir string, remote remoteFlags, opts ...client.Option) (*client.Client, error) {
	addr := remote.url
	opts = append(append(remote.options(), opts...), client.WithClientInfo("zeroclaw-cli", version.Version))
	if !remote.remote() {
		dirs, err := endpoint.ResolveDirs(configDir, nil)
		if err != nil {
			return nil, err
		}
		addr = endpoint.Address(dirs, nil)
	}
	c, err := client.Dial(ctx, addr, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// jsonLine encodes v as one compact JSON line.
func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(b, '\n'), err
}

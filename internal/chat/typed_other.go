//go:build !unix

package chat

import "context"

// watchTyped: on this platform only Ctrl-C cancels a running turn; typed lines wait
// for the next prompt.
func (ch *chat) watchTyped(ctx context.Context, onLine func(string)) { <-ctx.Done() }

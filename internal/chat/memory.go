package chat

import (
	"fmt"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// RecalledLine is the one line that shows what a turn recalled: each memory by
// its key (else its id) with its score, "recalled: deploy (0.91), mem_… (0.40)".
func RecalledLine(entries []client.RecalledEntry) string {
	parts := make([]string, len(entries))
	for i, e := range entries {
		name := e.Key
		if name == "" {
			name = e.ID
		}
		parts[i] = fmt.Sprintf("%s (%.2f)", clip(name, 60), e.Score)
	}
	return "recalled: " + strings.Join(parts, ", ")
}

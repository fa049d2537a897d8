package daemon

import (
	"context"
	"log/slog"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/upload"
)

// removeUploadTemps removes the temporary files that commits interrupted by a crash
// left (docs/protocol.md, "Storage failures") in every workspace an upload may have
// gone to: each agent's and each stored session's. It runs before the daemon serves,
// so no commit is in flight. A failure is logged: the daemon serves anyway, and the
// files stay.
func removeUploadTemps(ctx context.Context, cfg config.Config, dataDir string, st *store.Store, log *slog.Logger) {
	var workspaces []string
	for alias, a := range cfg.Agents {
		workspaces = append(workspaces, a.Workspace(alias, dataDir))
	}
	stored, err := st.Workspaces(ctx)
	if err != nil {
		log.Warn("listing workspaces for temporary upload files", "err", err)
	}
	seen := make(map[string]bool, len(workspaces)+len(stored))
	for _, ws := range append(workspaces, stored...) {
		if seen[ws] {
			continue
		}
		seen[ws] = true
		n, err := upload.RemoveTemps(ws)
		if n > 0 {
			log.Info("removed temporary files of interrupted uploads", "workspace", ws, "files", n)
		}
		if err != nil {
			log.Warn("removing temporary files of interrupted uploads", "workspace", ws, "err", err)
		}
	}
}

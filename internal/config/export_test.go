package config

import "context"

// Apply commits entries under the write lock, as config/set does after its
// authorization step.
func (l *Live) Apply(ctx context.Context, entries []Entry) error {
	tx, err := l.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.End()
	return tx.Commit(entries)
}

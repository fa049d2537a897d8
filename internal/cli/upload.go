package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func uploadCmd() *cobra.Command {
	var configDir, sessionID string
	cmd := &cobra.Command{
		Use:   "upload --session ID FILE...",
		Short: "Upload files into a session's workspace in chunks",
		Long: `Upload each FILE into the workspace of session ID through file/upload/begin, chunk and
commit, with a progress bar on stderr. Each file's entry (ref_id, marker,
workspace_path, size_bytes, deduplicated) is printed as one line of JSON on stdout;
pass its ref_id in session/prompt attachments. A chunk whose answer is lost is sent
again with the same offset.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if sessionID == "" {
				return errors.New("--session is required")
			}
			dialCtx, cancel := context.WithTimeout(context.Background(), callTimeout)
			c, err := connect(dialCtx, configDir, remoteFlags{})
			cancel()
			if err != nil {
				return err
			}
			defer c.Close()
			// No deadline on the transfer itself: a chunk without an answer in time is
			// sent again, and given up after a few tries (client.Upload).
			for _, path := range files {
				entry, err := c.Upload(context.Background(), sessionID, path, progressOf(cmd.ErrOrStderr(), filepath.Base(path)))
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				line, err := jsonLine(entry)
				if err != nil {
					return err
				}
				if _, err := cmd.OutOrStdout().Write(line); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configDir, "config-dir", "", "config directory of the daemon (default $ZEROCLAW_CONFIG_DIR or ~/.zeroclaw)")
	f.StringVar(&sessionID, "session", "", "the session whose workspace receives the files (required)")
	return cmd
}

// progressOf renders client.Upload's progress calls on w.
func progressOf(w io.Writer, name string) func(done, total int64) {
	var bar interface {
		Add(int) error
		Finish() error
	}
	var shown int64
	return func(done, total int64) {
		if bar == nil {
			bar = progress(w, name, int(total))
		}
		bar.Add(int(done - shown))
		shown = done
		if done == total {
			bar.Finish()
		}
	}
}

// progress is a bar with bytes, rate and ETA on a terminal; elsewhere a plain line
// per tenth of the file.
func progress(w io.Writer, name string, size int) interface {
	Add(int) error
	Finish() error
} {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return progressbar.NewOptions64(int64(size),
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription(name),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(f) }),
		)
	}
	return &plainProgress{w: w, name: name, size: size, start: time.Now()}
}

type plainProgress struct {
	w          io.Writer
	name       string
	size, done int
	shown      int // tenths shown
	start      time.Time
}

func (p *plainProgress) Add(n int) error {
	p.done += n
	if p.size == 0 {
		return nil
	}
	if tenth := p.done * 10 / p.size; tenth > p.shown {
		p.shown = tenth
		elapsed := time.Since(p.start).Seconds()
		rate := float64(p.done) / max(elapsed, 1e-9)
		eta := float64(p.size-p.done) / max(rate, 1)
		fmt.Fprintf(p.w, "%s: %d/%d bytes (%d%%), %.1f MB/s, ETA %.0fs\n", p.name, p.done, p.size, p.done*100/p.size, rate/1e6, eta)
	}
	return nil
}

func (p *plainProgress) Finish() error {
	if p.size == 0 {
		fmt.Fprintf(p.w, "%s: 0 bytes\n", p.name)
	}
	return nil
}

package config

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// Watcher reloads a configuration when its files change, and on demand.
// Run is its loop; Reload asks the loop to reload now (on SIGHUP).
type Watcher struct {
	path     string
	every    time.Duration
	onChange func(*Config)
	onError  func(error)
	reload   chan struct{} // capacity 1: a pending Reload
	loaded   bool          // Load succeeded: Run starts from its configuration
	last     string        // the files' stamp before Load read them
}

// NewWatcher returns a watcher of path (a file or a directory, as Load
// takes) polling every interval; an interval of 0 or less polls never, so
// that only Reload reloads. onChange gets each configuration loaded,
// onError each load that failed: the caller keeps its current
// configuration then. Both are called from Run's goroutine, one at a time.
func NewWatcher(path string, every time.Duration, onChange func(*Config), onError func(error)) *Watcher {
	return &Watcher{path: path, every: every, onChange: onChange, onError: onError, reload: make(chan struct{}, 1)}
}

// Reload asks Run to load the files now, changed or not. It does not wait;
// reloads asked for while one is pending are one reload.
func (w *Watcher) Reload() {
	select {
	case w.reload <- struct{}{}:
	default:
	}
}

// Load loads the files now and returns their configuration, or the error,
// without calling onChange or onError: a caller that needs a configuration
// before it serves takes it from here. After a Load that succeeded, Run
// starts from that configuration: it does not load the files again but
// looks for changes since Load read them. Load is for before Run, not
// while it runs.
func (w *Watcher) Load() (*Config, error) {
	s := stamp(w.path)
	c, err := Load(w.path)
	if err != nil {
		return nil, err
	}
	w.loaded, w.last = true, s
	return c, nil
}

// Run loads the configuration and reports it (onChange, or onError),
// unless Load has already loaded it, then polls the files' names, sizes and
// modification times, and loads and reports again whenever they change or
// Reload asks. A change that leaves a file's size and modification time as
// they were is not seen. It returns when ctx ends; the caller runs it in a
// goroutine it owns and waits for it by waiting for Run to return.
func (w *Watcher) Run(ctx context.Context) {
	last := w.last
	if !w.loaded {
		last = w.load(nil)
	}
	var tick <-chan time.Time
	if w.every > 0 {
		t := time.NewTicker(w.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.reload:
			last = w.load(nil)
		case <-tick:
			if now := stamp(w.path); now != last {
				last = w.load(&now)
			}
		}
	}
}

// load loads and reports the files and returns the stamp they had before
// they were read (taken now unless given), so that a write during the
// load is seen at the next poll.
func (w *Watcher) load(before *string) string {
	s := ""
	if before != nil {
		s = *before
	} else {
		s = stamp(w.path)
	}
	c, err := Load(w.path)
	if err != nil {
		w.onError(err)
	} else {
		w.onChange(c)
	}
	return s
}

// stamp describes the files Load would read: each one's name, size and
// modification time, or the error that hides them.
func stamp(path string) string {
	files, err := configFiles(path)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f)
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "\x00%d\x00%d", st.ModTime().UnixNano(), st.Size())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

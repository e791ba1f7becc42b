package main

import (
	"io"
	"log/slog"
)

// newLogger returns the logger every part of the server writes to: text or
// JSON lines on w, from level up.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

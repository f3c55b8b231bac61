package process

import "log/slog"

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

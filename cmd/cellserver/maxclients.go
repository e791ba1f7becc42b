package main

import (
	"fmt"
	"log/slog"
)

// openFileReserve is how many file descriptors maxclients leaves for
// everything but clients: the listeners, the backing store's connections,
// the event loops' epoll instances. It is Redis's CONFIG_MIN_RESERVED_FDS.
const openFileReserve = 32

// fitMaxClients returns how many clients an open-file limit of limit
// leaves room for, at most want: 0 when the limit is all reserve.
func fitMaxClients(want int, limit uint64) int {
	if limit <= openFileReserve {
		return 0
	}
	return int(min(uint64(want), limit-openFileReserve))
}

// adjustMaxClients does what Redis does at start with maxclients: when the
// open-file limit is too low for want clients, it raises the soft limit
// toward the hard one, then returns how many clients the limit allows, at
// most want, logging any change. It fails when no client fits. Where the
// system has no such limit, want stands.
func adjustMaxClients(want int, log *slog.Logger) (int, error) {
	need := uint64(want) + openFileReserve
	soft, hard, err := openFileLimit()
	if err != nil {
		if err != errNoOpenFileLimit {
			log.Warn("cannot read the open-file limit; maxclients stands as asked", "maxclients", want, "err", err)
		}
		return want, nil
	}
	if soft >= need {
		return want, nil
	}
	if raised := min(need, hard); raised > soft {
		if err := setOpenFileLimit(raised, hard); err != nil {
			log.Warn("cannot raise the open-file limit", "from", soft, "to", raised, "err", err)
		} else {
			log.Info("raised the open-file limit", "from", soft, "to", raised)
			soft = raised
		}
	}
	n := fitMaxClients(want, soft)
	if n == 0 {
		return 0, fmt.Errorf("the open-file limit (ulimit -n) of %d leaves no room for a client; raise it to at least %d", soft, need)
	}
	if n < want {
		log.Warn("maxclients lowered to what the open-file limit allows; raise ulimit -n for more",
			"maxclients", n, "asked", want, "open_file_limit", soft, "reserved", openFileReserve)
	}
	return n, nil
}

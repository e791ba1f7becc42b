package commands

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clientInfo is CLIENT INFO: the caller's line of CLIENT LIST.
func clientInfo(cx *Context, w Writer, args [][]byte) {
	var b strings.Builder
	appendClientLine(&b, cx.Client.Info(), cx.Client, cx.Engine().Now())
	w.WriteVerbatim(b.String())
}

// clientList is CLIENT LIST [TYPE type] [ID id ...].
func clientList(cx *Context, w Writer, args [][]byte) {
	// >> Args
	var ids []int64
	normal := true // every cellserver client is of type normal
	switch {
	case len(args) > 3 && equalFold(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := ParseInt(a)
			if !ok {
				w.WriteError(msgInvalidClientID)
				return
			}
			ids = append(ids, id)
		}
	case len(args) == 4 && equalFold(args[2], "type"):
		switch t := args[3]; {
		case equalFold(t, "normal"):
		case equalFold(t, "master"), equalFold(t, "replica"), equalFold(t, "slave"), equalFold(t, "pubsub"):
			normal = false
		default:
			w.WriteError(fmt.Sprintf(msgUnknownClientTyp, quoteC(t)))
			return
		}
	case len(args) != 2:
		w.WriteError(msgSyntax)
		return
	}

	// >> Operation
	clients := connectedClients(cx)
	var list []ClientInfo
	switch {
	case ids != nil:
		for _, id := range ids {
			if i, ok := slices.BinarySearchFunc(clients, id, func(c ClientInfo, id int64) int {
				return cmp.Compare(c.ID, id)
			}); ok {
				list = append(list, clients[i])
			}
		}
	case normal:
		list = clients
	}

	// >> Response
	now := cx.Engine().Now()
	var b strings.Builder
	for _, c := range list {
		var self *Client
		if c.ID == cx.Client.ID {
			self = cx.Client
		}
		appendClientLine(&b, c, self, now)
	}
	w.WriteVerbatim(b.String())
}

// connectedClients returns the host's clients sorted by id, with the
// caller's live state in place of its snapshot (and added if the host's
// snapshot lacks it).
func connectedClients(cx *Context) []ClientInfo {
	infos := cx.cmds.opts.Host.Clients()
	clients := append(make([]ClientInfo, 0, len(infos)+1), infos...) // the host's slice is not ours to change
	self := cx.Client.Info()
	found := false
	for i := range clients {
		if clients[i].ID == self.ID {
			clients[i], found = self, true
		}
	}
	if !found {
		clients = append(clients, self)
	}
	slices.SortFunc(clients, func(a, b ClientInfo) int { return cmp.Compare(a.ID, b.ID) })
	return clients
}

// appendClientLine appends c's CLIENT LIST line, newline included, in
// Redis 7's field order (with 7.2's lib-name and lib-ver). self is the
// calling client's live state, whose MULTI queue may be read; another
// client's queue belongs to its connection, so only whether it is in MULTI
// is shown. Buffers and memory are not tracked per client and read 0;
// there is no file descriptor to show, so fd is -1.
func appendClientLine(b *strings.Builder, c ClientInfo, self *Client, now time.Time) {
	flags, multi := "", -1
	if c.Monitor {
		flags = "O"
	}
	if c.InMulti {
		flags, multi = flags+"x", 0
		if self != nil && self.multi != nil {
			multi = len(self.multi.queued)
		}
	}
	if flags == "" {
		flags = "N"
	}
	idle := int64(now.Sub(c.LastActive) / time.Second)
	if self != nil {
		idle = 0 // it is running a command now
	}
	cmd := c.LastCommand
	if cmd == "" {
		cmd = "NULL"
	}
	user := c.User
	if user == "" {
		user = defaultUser
	}
	b.WriteString("id=")
	b.WriteString(strconv.FormatInt(c.ID, 10))
	b.WriteString(" addr=" + c.Addr + " laddr=" + c.LocalAddr + " fd=-1 name=" + c.Name)
	b.WriteString(" age=" + strconv.FormatInt(int64(now.Sub(c.Created)/time.Second), 10))
	b.WriteString(" idle=" + strconv.FormatInt(max(idle, 0), 10))
	b.WriteString(" flags=" + flags + " db=0 sub=0 psub=0 ssub=0 multi=" + strconv.Itoa(multi))
	b.WriteString(" qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0")
	b.WriteString(" events=r cmd=" + cmd + " user=" + user + " redir=-1 resp=" + strconv.Itoa(c.Proto))
	b.WriteString(" lib-name=" + c.LibName + " lib-ver=" + c.LibVer + "\n")
}

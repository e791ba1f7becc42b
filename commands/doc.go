// Package commands turns the argument bytes of a Redis command into a typed
// request, runs it against the engine (or, in shared mode, the Store) and
// writes the reply. The command table is data; every error text a client
// can see is a constant here.
//
// # The path of one CL.THROTTLE
//
// In memory (the default):
//
//	server/loopconn_linux.go   an event loop reads the socket (evloop.serve, advance);
//	  or server/godriver.go    a goroutine per connection (goDriver.serve), for TLS and --event-loops 0
//	server/session.go          session.run: parse in place (server/parse.go), dispatch with recover()
//	commands/session.go        session.Dispatch: the connection's Client, its Effects back to the server
//	commands/commands.go       Commands.Dispatch (table lookup, auth, arity checked once), run (counted, timed)
//	commands/throttle.go       clThrottle: redis-cell's arguments and errors, then writeThrottle
//	engine/throttle.go         Engine.Throttle: the key's shard locked, its state read and stored
//	engine/gcra.go             gcra: the decision, a pure function
//
// and the reply goes back through server/writer.go, flushed once per batch.
// In shared mode (Options.Store set), clThrottle calls Store.Throttle
// (commands/store.go) instead and pauses its reply (a decisionLater,
// commands/decision_later.go, or await in commands/later.go inside EXEC;
// server/writer.go's Pause); persist/shared.go queues the decision for
// persist/shared_batcher.go, persist/shared_batch.go decides it with engine.Decide
// (engine/decide.go, the same gcra) and sets the result in the store with
// persist/shared_script.go's compare-and-set, one round trip per batch; the
// reply goes out in order when it completes.
//
// # Files
//
// The package stays one package: the rate-limit handlers are about 500 of
// its lines, and they use the same Context, table, parsing, counters and
// pause as every other command, which a subpackage would have to export.
// The files say which part they hold:
//
//   - The rate-limit commands: throttle.go (CL.THROTTLE), window.go
//     (SW.THROTTLE, SWC.THROTTLE, FW.THROTTLE), throttle_all.go (THROTTLE.ALL),
//     leaky.go (LB.THROTTLE), swlog.go (SW.LOG), top.go (THROTTLE.TOP),
//     engine_errors.go (the engine's errors as each command words them).
//   - Dispatch and what every command shares: commands.go (Options,
//     Dispatch), table.go (Command, flags, arity), session.go (Session,
//     Effect), client.go (Client), writer.go (Writer, Pauser, Paused, Reply), parse.go
//     (ParseInt, QuoteArg), errors.go (error texts), observe.go
//     (per-command counters, the slow log's feed).
//   - Shared mode: store.go (Store), later.go (await, offload),
//     keyspace_store.go (the keyspace commands against the Store).
//   - The Redis-compatibility commands: keyspace.go, glob.go (keys);
//     connection.go, hello.go, auth.go (connection); monitor.go (MONITOR); client_cmd.go,
//     client_list.go (CLIENT); transaction.go (MULTI/EXEC);
//     server.go, info*.go, config.go, slowlog.go, command_*.go,
//     subcommand.go, host.go (server and introspection).
package commands

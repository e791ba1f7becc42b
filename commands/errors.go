package commands

// Client-visible error texts. The first word is the error code; the wording
// is Redis 7's, or redis-cell's for CL.THROTTLE.
const (
	msgUnknownCommand   = "ERR unknown command '%s', with args beginning with: %s"
	msgWrongArity       = "ERR wrong number of arguments for '%s' command"
	msgWrongType        = "WRONGTYPE Operation against a key holding the wrong kind of value"
	msgNotInteger       = "ERR value is not an integer or out of range"
	msgSyntax           = "ERR syntax error"
	msgUnknownSub       = "ERR unknown subcommand '%s'. Try %s HELP."
	msgMultiNested      = "ERR MULTI calls can not be nested"
	msgExecNoMulti      = "ERR EXEC without MULTI"
	msgDiscardNoMulti   = "ERR DISCARD without MULTI"
	msgExecAbort        = "EXECABORT Transaction discarded because of previous errors."
	msgExecAbortBecause = "EXECABORT Transaction discarded because of: "
	msgWatchInMulti     = "ERR WATCH inside MULTI is not allowed"
	msgDBIndex          = "ERR DB index is out of range"
	msgSelectInvalid    = "ERR value is not an integer or out of range"
	msgSelectRange      = "ERR value is out of range, value must between -2147483648 and 2147483647"
	msgNoProto          = "NOPROTO unsupported protocol version"
	msgInvalidCursor    = "ERR invalid cursor"
	msgClientName       = "ERR Client names cannot contain spaces, newlines or special characters."
	msgInternal         = "ERR internal error while running '%s'; the server logged it and keeps serving"
	msgInvalidExpireCmd = "ERR invalid expire time in '%s' command"
	msgUnknownType      = "ERR unknown type name '%s'"
	msgNoSuchClient     = "ERR No such client"
	msgHelloAuth        = "WRONGPASS invalid username-password pair or user is disabled."
	msgNotAllowedInMult = "ERR Command not allowed inside a transaction"

	// redis-cell's texts, kept for drop-in compatibility.
	msgCellUsage    = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	msgCellParseInt = "Cell error: Store error: Couldn't parse as integer: "
	msgCellZeroRate = "Cell error: Store error: Zero rates are not supported"
	msgCellExpire   = "Cell error: Store error: Error while setting key expire"
)

// MsgInternal is the reply to a command whose handler panicked; the server
// writes it after recovering. It takes the command name.
const MsgInternal = msgInternal

// Connection, server and introspection commands' texts (Redis 7's).
const (
	msgProtoNotInt      = "ERR Protocol version is not an integer or out of range"
	msgHelloOption      = "ERR Syntax error in HELLO option '%s'"
	msgAuthNoPassword   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	msgInvalidClientID  = "ERR Invalid client ID"
	msgUnknownClientTyp = "ERR Unknown client type '%s'"
	msgSetInfoOption    = "ERR Unrecognized option '%s'"
	msgSetInfoValue     = "ERR %s cannot contain spaces, newlines or special characters."
	msgInvalidCommand   = "ERR Invalid command specified"
	msgNoKeyArguments   = "ERR The command has no key arguments"
	msgInvalidArgCount  = "ERR Invalid number of arguments specified for command"
	msgInvalidArguments = "ERR Invalid arguments specified for command"
	msgConfigUnknown    = "ERR Unknown option or number of arguments for CONFIG SET - '%s'"
	msgConfigImmutable  = "ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config"

	// cellserver's own: Redis would stop replying, which cellserver does
	// not support yet.
	msgClientReplyMode = "ERR CLIENT REPLY OFF and SKIP are not supported; only ON is"
)

// Authentication texts (Redis 7.0's).
const (
	msgNoAuth = "NOAUTH Authentication required."
	// msgHelloNoAuth is Redis 7.0's wording; 7.2 writes "HELLO <proto> AUTH".
	msgHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the " +
		"HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP " +
		"protocol version at the same time"
)

// Bounds and the slow log's texts (Redis 7's).
const (
	msgOOM              = "OOM command not allowed when used memory > 'maxmemory'."
	msgSlowlogCount     = "ERR count should be greater than or equal to -1"
	msgSubcommandSyntax = "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
)

// SW.THROTTLE, SWC.THROTTLE, FW.THROTTLE and THROTTLE.ALL texts
// (cellserver's own, in Redis's style: each names the problem).
const (
	msgWindowLimit    = "ERR limit must be an integer from 1 to 4294967295"
	msgWindowDuration = "ERR window must be a positive whole number of seconds or a duration such as " +
		"250ms, 10s, 5m, 1h or 1d, up to 100 years"
	msgQuantity      = "ERR quantity must be a non-negative integer"
	msgWindowOption  = "ERR unknown option '%s'; the only option is MS"
	msgAllNoRule     = "ERR THROTTLE.ALL needs at least one rule: CL key max_burst count period, or SW, SWC or FW key limit window"
	msgAllUnknown    = "ERR unknown rule or option '%s': a rule starts with CL, SW, SWC or FW; the options are QUANTITY n and MS"
	msgAllIncomplete = "ERR rule %d is incomplete: %s"
	msgAllInRule     = "ERR rule %d (%s): %s"  // the rule's number and family, then the problem:
	msgAllCellInt    = "%s must be an integer" // a CL rule's max_burst, count or period
	msgAllZeroRate   = "zero rates are not supported: count and period must not be 0"
	msgAllDuplicate  = "ERR rules %d and %d name the same key; each rule needs a key of its own"
	// msgAllRateRounds and msgAllCellExpire are GCRA's errors when the
	// engine, not the parser, finds them.
	msgAllRateRounds = "ERR a CL rule's rate is zero: its period divided by its count is under one nanosecond"
	msgAllCellExpire = "ERR a CL rule's arguments would set its TAT in the past (redis-cell's 'Error while setting key expire'); nothing was written"
)

// Texts that say which rule of an argument or of THROTTLE.ALL's syntax a
// request breaks, where a general text would mislead.
const (
	// msgWindowLimitSign and msgWindowLimitZero answer a limit written as
	// redis-cell's integers allow (+3, 03) but Redis's do not: the value is
	// in range, its spelling is not.
	msgWindowLimitSign = "ERR limit must be written without a sign: Redis reads integers without '+'"
	msgWindowLimitZero = "ERR limit must be written without leading zeros, as Redis reads integers"
	// msgAllWrongType keeps WRONGTYPE first, for clients that match on the
	// code, and names the rule (from 1) whose key is of another family.
	msgAllWrongType       = msgWrongType + " (rule %d)"
	msgAllQuantityMissing = "ERR QUANTITY needs a value: QUANTITY n, a non-negative integer"
	msgAllTwice           = "ERR syntax error: %s is given twice" // QUANTITY, MS or MAXWAIT
	// LB.THROTTLE's argument errors, and THROTTLE.ALL's answer to an LB rule.
	msgLeakyCount  = "ERR count must be an integer from 1 to 4294967295"
	msgLeakyPeriod = "ERR period must be a positive whole number of seconds or a duration such as " +
		"250ms, 10s, 5m, 1h or 1d, up to 100 years"
	msgLeakyMaxWait = "ERR MAXWAIT needs a duration: 0, a whole number of seconds, or a duration such as " +
		"250ms, 10s, 5m, 1h or 1d, up to 100 years"
	msgLeakyOption = "ERR unknown option '%s'; the options are MAXWAIT duration and MS"
	msgAllLeaky    = "ERR THROTTLE.ALL does not take LB rules: an LB call reserves a departure in the future " +
		"and answers with a wait, while THROTTLE.ALL admits its request now under every rule or none; " +
		"call LB.THROTTLE on its own"
)

package commands

import (
	"errors"
	"fmt"

	"github.com/cellserver/cellserver/engine"
)

// engineTexts are a command's replies to the engine's errors whose wording
// depends on the command; the other errors read the same for every command.
type engineTexts struct {
	zeroRate string // engine.ErrZeroRate
	expire   string // engine.ErrExpire
}

var (
	// cellTexts are CL.THROTTLE's: redis-cell's words.
	cellTexts = engineTexts{zeroRate: msgCellZeroRate, expire: msgCellExpire}
	// ruleTexts are SW.THROTTLE's, SWC.THROTTLE's, FW.THROTTLE's and
	// THROTTLE.ALL's, whose CL rules are the only source of these errors.
	ruleTexts = engineTexts{zeroRate: msgAllRateRounds, expire: msgAllCellExpire}
)

// engineErrorText is the reply to an error from the engine, which wrote
// nothing; texts are the running command's wordings.
func engineErrorText(err error, texts *engineTexts) string {
	if text, ok := errorReply(err); ok {
		return text
	}
	var dup *engine.DuplicateKeyError
	var wrong *engine.RuleWrongTypeError
	switch {
	case errors.As(err, &wrong):
		return fmt.Sprintf(msgAllWrongType, wrong.Rule+1)
	case errors.Is(err, engine.ErrWrongType):
		return msgWrongType
	case errors.Is(err, engine.ErrOutOfMemory):
		return msgOOM
	case errors.As(err, &dup):
		return fmt.Sprintf(msgAllDuplicate, dup.First+1, dup.Second+1)
	case errors.Is(err, engine.ErrNoRules):
		return msgAllNoRule
	case errors.Is(err, engine.ErrZeroRate):
		return texts.zeroRate
	case errors.Is(err, engine.ErrExpire):
		return texts.expire
	}
	return "ERR " + err.Error()
}

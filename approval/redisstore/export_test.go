package redisstore

import (
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
)

// TraceKeys makes s's scripts record every command they run, as
// "<COMMAND> <first argument>", on the Redis list logKey, so that a test can
// check the hash slot of every key a script touches. The scripts are the real
// ones, with redis.call routed through a logging wrapper.
func TraceKeys(s *Store, logKey string) {
	wrap := func(src string) *redis.Script {
		head := "local function __call(cmd, ...)\n" +
			"  redis.call('RPUSH', '" + logKey + "', cmd .. ' ' .. tostring((select(1, ...))))\n" +
			"  return redis.call(cmd, ...)\n" +
			"end\n"
		return redis.NewScript(head + strings.ReplaceAll(src, "redis.call(", "__call("))
	}
	s.put = wrap(putLua)
	s.claim = wrap(claimLua)
	s.complete = wrap(completeLua)
	s.cancel = wrap(cancelLua)
	s.addCards = wrap(addCardsLua)
	s.pending = wrap(pendingLua)
	s.resolve = wrap(resolveLua)
	s.putGrant = wrap(putGrantLua)
	s.listGrants = wrap(listGrantsLua)
	s.revoke = wrap(revokeLua)
	s.step = wrap(stepLua)
}

// Keys returns the keys of a's record, its session's pending pointer and
// its session's result cache.
func Keys(s *Store, a *approval.Approval) (record, pointer, idem string) {
	sh, _ := a.ID.Shard()
	return s.recordKey(sh, a.ID), s.pointerKey(a.Session), s.idemKey(a.Session, a.IdempotencyKey)
}

// Channel returns the outcome channel.
func Channel(s *Store) string { return s.channel }

// ScriptSources returns the Lua source of every script, by name.
func ScriptSources() map[string]string {
	return map[string]string{"put": putLua, "claim": claimLua, "complete": completeLua, "cancel": cancelLua, "addCards": addCardsLua, "pending": pendingLua,
		"resolve": resolveLua, "putGrant": putGrantLua, "listGrants": listGrantsLua, "revoke": revokeLua,
		"step": stepLua}
}

// OutcomeChannel is the pub/sub channel s publishes outcomes on.
func OutcomeChannel(s *Store) string { return s.channel }

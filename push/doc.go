// Package push carries configuration from the admin (which owns
// PostgreSQL) to every gateway node through the limiter Redis. It holds
// both ends of the protocol, so its wire format lives in one place
// (docs/architecture.md, "How configuration reaches the gateways"):
//
//   - Publisher (admin side) writes, after every committed admin write,
//     the snapshot, the key records the write touched, one entry on the
//     change stream and finally the watermark; FlushStageCache bumps a
//     stage's cache generation; Reconcile repairs Redis after it lost data.
//   - Reader (gateway side) follows the change stream with a blocking
//     XREAD, hands each newer snapshot to the gateway, and looks API keys up
//     (local bounded cache, then Redis, coalesced per hash).
//
// # Redis layout
//
// Every name starts with a prefix (default "tg", see DefaultPrefix); the
// functions in keys.go build them. Config state never expires, except
// tombstones (below).
//
//	<p>:config:snapshot        JSON of plans.Snapshot; its text starts with {"version":N
//	<p>:key:{<hash>}           JSON key record (see below), one per API key hash
//	<p>:config:changes         stream of change, usage and reload entries (XADD MAXLEN ~ cap)
//	<p>:config:version         watermark: the last config version fully written (decimal)
//	<p>:cache:gen:{<api>:<st>} a stage's cache generation (INCR on flush, never expires)
//
// A key record is the JSON of plans.KeyRecord with "version" written first:
//
//	{"version":12,"keyId":"abcdefghij","enabled":true,"planIds":["a1b2c3"]}
//
// with "expiresAt" (Unix milliseconds) when the key expires, and on the
// record of a rotated key's previous value "valueExpiresAt", when its
// overlap ends: the gateway refuses the key (or that value) from then on,
// on its own estimate of Redis time (docs/behaviour.md, "Key lifecycle"),
// so neither moment needs a push; and "quotaAnchor" and "quotaTimeZone"
// when the key has its own quota calendar (plans.KeyCalendar), which the
// gateway runs the key's quota by on every plan.
//
// A deleted key is written as a tombstone {"version":13,"deleted":true} that
// expires after TombstoneTTL: a tombstone, unlike a DEL, keeps a slower
// publisher from bringing an older record back to life. Lookup treats a
// tombstone as an unknown key.
//
// The snapshot, each key record and the watermark are written by Lua
// compare-and-set scripts (cas.lua, watermark.lua) that refuse anything not
// newer than what is stored, so several admin processes may publish at once
// and nothing ever moves backwards. Each script touches one key, so it runs
// on Redis Cluster too.
//
// # Stream entries
//
// All field values are strings.
//
//	change: version=N snapshot=0|1 keys=h1,h2 plans=p1,p2 stages=api:stage,...
//	usage:  usage=planId:keyId             (UpdateUsage of one key)
//	reload: version=N snapshot=1 reload=1   (written by a full republish)
//
// A reader drops the named key hashes from its local cache, reloads the
// snapshot when snapshot=1, and reloads everything on a reload entry, on a
// version gap (the stream was trimmed past it), when the stream ends before its
// position (Redis lost its data), on start and after an error.
package push

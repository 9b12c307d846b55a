package bus

import (
	"github.com/schedlens/schedlens/internal/events"
)

// Permissions is what one NATS user may publish and subscribe to: the least each schedlens
// process needs (docs/security.md, "NATS permissions"). Subjects not allowed are denied.
type Permissions struct {
	Publish, Subscribe []string
}

// Inbox prefixes of the roles: each process reads its replies (publish acknowledgements, JetStream
// API answers, pulled messages) on an inbox of its own, so that no user may subscribe to
// another's — a correlator's pulled messages cannot be read by a collector. A client of the
// role connects with nats.CustomInboxPrefix(prefix).
const (
	CollectorInboxPrefix  = "_INBOX_collector"
	CorrelatorInboxPrefix = "_INBOX_correlator"
)

// CollectorPermissions lets a collector publish envelopes on schedlens.v1.> and receive their
// acknowledgements, and read (not change) the stream's configuration. It cannot create,
// change or delete the stream or any consumer, nor read a message back.
func CollectorPermissions() Permissions {
	return Permissions{
		Publish:   []string{events.StreamSubjects, "$JS.API.STREAM.INFO." + StreamName},
		Subscribe: []string{CollectorInboxPrefix + ".>"},
	}
}

// CorrelatorPermissions lets a correlator own the stream's configuration (EnsureStream) and
// consume through its durable consumer: create or update that consumer only, pull, and
// acknowledge. It cannot publish an envelope, create another consumer, delete the stream or
// purge it.
func CorrelatorPermissions(consumer string) Permissions {
	api := "$JS.API."
	return Permissions{
		Publish: []string{
			api + "STREAM.INFO." + StreamName,
			api + "STREAM.CREATE." + StreamName,
			api + "STREAM.UPDATE." + StreamName,
			api + "CONSUMER.CREATE." + StreamName + "." + consumer,
			api + "CONSUMER.CREATE." + StreamName + "." + consumer + ".>",
			api + "CONSUMER.DURABLE.CREATE." + StreamName + "." + consumer,
			api + "CONSUMER.INFO." + StreamName + "." + consumer,
			api + "CONSUMER.MSG.NEXT." + StreamName + "." + consumer,
			"$JS.ACK." + StreamName + "." + consumer + ".>",
		},
		Subscribe: []string{CorrelatorInboxPrefix + ".>"},
	}
}

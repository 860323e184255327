package mediate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/wire"
)

// Continuity (spec 000 "mediated mode creates a hidden tool loop … MUST
// preserve effective tool-round context across turns"; ARCHITECTURE.md
// "Continuity is per conversation").
//
// The hidden assistant/tool messages of a turn are stored under a key made
// of the format, the agent, and a chained hash of the conversation's
// visible (runner-side) messages up to and including the message the turn
// answered with: the final text, or the native tool-call response of a
// handoff. On every request the same chain is computed over the runner's
// messages; where an assistant message's chain matches a stored key, the
// hidden messages are inserted right before it. Messages are hashed in the
// format's canonical form, so a runner re-serialising them does not break
// the key, and system messages are left out because feeds rewrite them on
// every turn (spec 003).
//
// A key names one turn. Two conversations of an agent whose visible
// messages are identical, answer included (templated prompts), reach the
// same key, and nothing the runner sends back separates them: the runner
// resends the answer's content, never the response id cllama returned
// (neither format's request carries one). So a key is claimed once
// (Store.PutOnce); a second turn ending at the same key marks it
// ambiguous, and neither turn's hidden rounds are restored (with an audit
// error), rather than one conversation receiving another's. Where the
// runner does echo something unique — the ids of native tool calls a
// handoff ends with — that is part of the canonical message and the keys
// differ.
//
// In formats where an answer is several items (Responses: reasoning, then
// a message or function calls), the items that lead into the answer
// (RolePrelude) are left out of the chain, as runners may drop them, and
// the hidden rounds go before them: a reasoning item stays right before
// the item it produced.
//
// A handoff (hidden rounds followed by a native-only response) is the same
// mechanism: its key ends at the native tool-call message, so the runner's
// follow-up carrying the native results gets the hidden transcript inserted
// once, right before that message (spec 002 "Mediation Loop" case 4). The
// entry stays, so later turns of the conversation remain coherent too.

// chain is a running hash over canonical messages.
type chain [sha256.Size]byte

var chainSeed = chain(sha256.Sum256([]byte("clawgo continuity v1")))

// next returns the chain extended by one message, given the digest of its
// canonical form.
func (c chain) next(canonDigest [sha256.Size]byte) chain {
	var buf [2 * sha256.Size]byte
	copy(buf[:], c[:])
	copy(buf[sha256.Size:], canonDigest[:])
	return chain(sha256.Sum256(buf[:]))
}

// continuityKey scopes a chain to a format and an agent: the hex SHA-256
// of format, 0, agent, 0 and the chain.
func continuityKey(format, agent string, c chain) string {
	var buf [256]byte
	b := append(buf[:0], format...)
	b = append(b, 0)
	b = append(b, agent...)
	b = append(b, 0)
	b = append(b, c[:]...)
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// canonMemo is a message's role and the digest of its canonical form.
type canonMemo struct {
	role   wire.Role
	digest [sha256.Size]byte
}

// canonOf canonicalises a message, remembering the result by the digest
// of its raw bytes: runners resend the whole transcript every turn, so
// almost every message of a request was canonicalised before.
func canonOf(f wire.ToolLoop, memo *canonCache, m json.RawMessage) canonMemo {
	raw := sha256.Sum256(m)
	key := memoKey{format: f.Name(), raw: raw}
	if c, ok := memo.get(key); ok {
		return c
	}
	canon, err := f.Canonical(m)
	if err != nil {
		canon = wire.Canon{Role: wire.RoleOther, Bytes: m}
	}
	c := canonMemo{role: canon.Role, digest: sha256.Sum256(canon.Bytes)}
	memo.put(key, c)
	return c
}

// restore inserts stored hidden rounds into msgs and returns the new
// message list, the chain over the visible messages, and the hidden
// messages it inserted (what cllama itself ran in earlier turns of the
// conversation; the runner's own messages are not among them). It hashes the
// messages once (the chain's steps and keys memoised, like the messages'
// digests, and the prefix this agent's previous request shares with this
// one taken from its walk), then asks the store for every assistant
// message's key (in one GetMany when the store reads many at once), in
// order.
func restore(ctx context.Context, f wire.ToolLoop, memo *canonCache, store ContinuityStore, agent string, msgs []json.RawMessage) (out []json.RawMessage, c chain, restored []json.RawMessage) {
	// ask is an assistant message: its index, its key, and where the run
	// of prelude items right before it starts (i when there is none):
	// hidden rounds go before that run.
	type ask struct {
		i, lead int
		key     string
	}
	var asks []ask
	c = chainSeed
	lead, from := 0, 0
	var steps []walkStep // with a store and messages past the walk: this request's walk
	wk := walkKey{format: f.Name(), agent: agent}
	if store != nil {
		var known []walkStep
		if prev := memo.walk(wk); prev != nil {
			from = prev.shared(msgs)
			known = prev.steps[:from]
			for i, st := range known {
				if st.key != "" {
					asks = append(asks, ask{i: i, lead: st.askLead, key: st.key})
				}
			}
			if from > 0 {
				c, lead = known[from-1].c, known[from-1].lead
			}
		}
		if from < len(msgs) {
			steps = make([]walkStep, len(msgs))
			copy(steps, known)
		}
	}
	for i := from; i < len(msgs); i++ {
		canon := canonOf(f, memo, msgs[i])
		var st walkStep
		switch canon.role {
		case wire.RoleSystem:
			lead = i + 1
		case wire.RolePrelude:
		default:
			sk := stepKey{format: f.Name(), agent: agent, prev: c, digest: canon.digest}
			step, ok := memo.step(sk)
			if !ok {
				step.next = c.next(canon.digest)
			}
			c = step.next
			if canon.role == wire.RoleAssistant && store != nil {
				if step.key == "" {
					step.key, ok = continuityKey(f.Name(), agent, c), false
				}
				asks = append(asks, ask{i: i, lead: lead, key: step.key})
				st.key, st.askLead = step.key, lead
			}
			if !ok {
				memo.putStep(sk, step)
			}
			lead = i + 1
		}
		if steps != nil {
			st.c, st.lead = c, lead
			steps[i] = st
		}
	}
	if steps != nil {
		if w := newWalk(msgs, steps, from); w != nil {
			memo.putWalk(wk, w)
		}
	}
	if len(asks) == 0 {
		return msgs, c, nil
	}
	var found [][]json.RawMessage
	if b, ok := store.(ContinuityBatch); ok {
		keys := make([]string, len(asks))
		for j, a := range asks {
			keys[j] = a.key
		}
		found = b.GetMany(ctx, keys)
	} else {
		found = make([][]json.RawMessage, len(asks))
		for j, a := range asks {
			if hidden, ok := store.Get(ctx, a.key); ok {
				found[j] = hidden
			}
		}
	}
	n := len(msgs)
	for j := range asks {
		if j < len(found) {
			n += len(found[j])
		}
	}
	if n == len(msgs) {
		return msgs, c, nil
	}
	out = make([]json.RawMessage, 0, n)
	next := 0 // msgs[next:] are not in out yet
	for j, a := range asks {
		if j >= len(found) || len(found[j]) == 0 {
			continue
		}
		entry, replaces := entryReplaces(found[j])
		out = append(out, msgs[next:a.lead]...)
		out = append(out, entry...)
		restored = append(restored, entry...)
		next = a.lead
		if replaces {
			// The entry holds what the provider saw in the place of the
			// answer item the runner sent back (and of the prelude items
			// before it): that item is not sent.
			next = a.i + 1
		}
	}
	return append(out, msgs[next:]...), c, restored
}

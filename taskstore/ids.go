package taskstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// A task's id says where its log is. The id of every task the mesh
// creates is a UUIDv8 that it mints:
//
//	xxxxxxxx-xxxx-8xxx-yxxx-xxxxxxxxxxxx
//	|owner  |ctx   ctx |unique to agent, owner and key (62 bits)
//
// The first 32 bits are a hash of the owner (the caller's principal), the
// next 28 (around the version nibble) a hash of the context id, the rest a
// hash of the agent, the owner and the key the id is derived from (the
// messageId: a retried send derives the same id, and the log's
// create-if-absent append is the idempotency check). The log's subject is
// the id's five groups as tokens:
//
//	a2a.task.<owner>.<ctx>.<8ctx>.<yxxx>.<xxxxxxxxxxxx>
//
// so a read by id computes its subject, an owner's tasks are the subjects
// under a2a.task.<owner>.> and one context's under
// a2a.task.<owner>.<ctx>.<8ctx>.> (a filter the server applies itself).
// A hash shared by two owners or two contexts costs a listing a read,
// never a leak: every task listed is read and its owner checked.
//
// A task whose id the mesh did not mint (created by a test under a name,
// or migrated from the earlier layout) is kept under
// a2a.task.<owner>.<ctx>.<8ctx>.L.<id>, and an alias message on
// a2a.alias.<id> (stream A2A_ALIASES) names that subject.

// hdrAlias names, on an alias message, the subject of the task's log.
const hdrAlias = "A2a-Alias"

// MintTaskID is the id of the task that owner's turn to agent in context
// contextID starts, derived from key: the same for every retry.
func MintTaskID(owner, contextID, agent, key string) string {
	o := sha256.Sum256([]byte(owner))
	c := sha256.Sum256([]byte(contextID))
	h := sha256.Sum256([]byte("a2amesh task\x00" + agent + "\x00" + owner + "\x00" + key))
	var u uuid.UUID
	copy(u[0:4], o[0:4])
	u[4], u[5] = c[0], c[1]
	u[6] = 0x80 | c[2]>>4
	u[7] = c[2]<<4 | c[3]>>4
	u[8] = 0x80 | h[0]&0x3f
	copy(u[9:], h[1:8])
	return u.String()
}

// DeriveContextID is the context a turn that names none starts, derived
// as its task's id is (so that a retry derives the same task id).
func DeriveContextID(agent, owner, key string) string {
	return uuid.NewSHA1(IDSpace, []byte("context\x00"+agent+"\x00"+owner+"\x00"+key)).String()
}

// minted reports whether id has the shape of an id MintTaskID makes: a
// version 8 UUID in its canonical lower-case text.
func minted(id string) bool {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' || id[14] != '8' {
		return false
	}
	switch id[19] {
	case '8', '9', 'a', 'b':
	default:
		return false
	}
	for i := 0; i < 36; i++ {
		switch c := id[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		default:
			return false
		}
	}
	return true
}

// LogSubjects is the filter of every task's log.
const LogSubjects = subjLogPrefix + ">"

// LogSubject is the log subject of a task whose id the mesh minted (false
// for any other id: its log is found through its alias).
func LogSubject(id string) (string, bool) { return mintedSubject(id) }

// mintedSubject is the log subject of a minted id.
func mintedSubject(id string) (string, bool) {
	if !minted(id) {
		return "", false
	}
	return subjLogPrefix + strings.ReplaceAll(id, "-", "."), true
}

// hash32 is the first 32 bits of SHA-256(s), in hex.
func hash32(s string) [4]byte {
	h := sha256.Sum256([]byte(s))
	return [4]byte(h[:4])
}

// ownerToken is the subject token of owner's tasks.
func ownerToken(owner string) string {
	o := hash32(owner)
	return hex.EncodeToString(o[:])
}

// contextTokens are the two subject tokens of a context, as a minted id
// spells them.
func contextTokens(contextID string) string {
	c := hash32(contextID)
	var u [4]byte
	u[0], u[1] = c[0], c[1]
	u[2] = 0x80 | c[2]>>4
	u[3] = c[2]<<4 | c[3]>>4
	s := hex.EncodeToString(u[:])
	return s[:4] + "." + s[4:]
}

// homeSubject is where the log of a task whose id was not minted is kept.
func homeSubject(owner, contextID, id string) string {
	return subjLogPrefix + ownerToken(owner) + "." + contextTokens(contextID) + ".L." + id
}

// aliasSubject holds the alias of a task whose id was not minted.
func aliasSubject(id string) string { return subjAliasPrefix + id }

// TaskIDOf is the id of the task whose log subject is subject.
func TaskIDOf(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, subjLogPrefix)
	if !ok {
		return "", false
	}
	tok := strings.Split(rest, ".")
	switch {
	case len(tok) != 5:
		return "", false
	case tok[3] == "L": // homeSubject
		return tok[4], tok[4] != ""
	}
	id := strings.Join(tok, "-")
	return id, minted(id)
}

// aliasCacheMax bounds the aliases a store remembers (they never change;
// only tests and migrated stores have any).
const aliasCacheMax = 100_000

type aliasCache struct {
	m sync.Map
	n atomic.Int64
}

// subject is the log subject of task id: computed when the mesh minted
// the id, else read from its alias (ErrTaskNotFound: there is none).
func (b *Store) subject(ctx context.Context, id string) (string, error) {
	if s, ok := mintedSubject(id); ok {
		return s, nil
	}
	if !bus.ValidToken(id) {
		return "", ErrTaskNotFound // no subject could hold it
	}
	if s, ok := b.aliases.m.Load(id); ok {
		return s.(string), nil
	}
	m, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.aliasStream.GetLastMsgForSubject(c, aliasSubject(id))
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return "", ErrTaskNotFound
	}
	if err != nil {
		return "", err
	}
	s := m.Header.Get(hdrAlias)
	if _, ok := TaskIDOf(s); !ok {
		return "", ErrTaskNotFound
	}
	if b.aliases.n.Add(1) <= aliasCacheMax {
		b.aliases.m.Store(id, s)
	}
	return s, nil
}

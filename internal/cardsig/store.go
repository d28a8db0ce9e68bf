package cardsig

import (
	"context"
	"errors"
	"fmt"
)

// Load returns the key set kept in st (bucket A2A_CARD_KEYS), creating
// one of a new key if there is none.
func Load(ctx context.Context, st *CardKeys) (*Keys, error) {
	data, _, err := st.LoadOrCreate(ctx, generated)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

func generated() ([]byte, error) {
	k, err := Generate()
	if err != nil {
		return nil, err
	}
	return k.Encode()
}

// Rotate adds a new key to the key set kept in NATS (see Keys.Rotate):
// every edge then signs each card with the old and the new key. It
// returns the new key set.
func Rotate(ctx context.Context, st *CardKeys) (*Keys, error) {
	return change(ctx, st, func(k *Keys) (*Keys, error) { return k.Rotate() })
}

// Retire drops every key but the newest from the key set kept in NATS
// (see Keys.Retire), ending a rotation. It returns the new key set.
func Retire(ctx context.Context, st *CardKeys) (*Keys, error) {
	return change(ctx, st, func(k *Keys) (*Keys, error) { return k.Retire(), nil })
}

// change rewrites the stored key set with f, again if another writer
// changed it meanwhile (a bounded number of times).
func change(ctx context.Context, st *CardKeys, f func(*Keys) (*Keys, error)) (*Keys, error) {
	for attempt := 0; attempt < 5; attempt++ {
		data, rev, err := st.LoadOrCreate(ctx, generated)
		if err != nil {
			return nil, err
		}
		k, err := Decode(data)
		if err != nil {
			return nil, err
		}
		next, err := f(k)
		if err != nil {
			return nil, err
		}
		enc, err := next.Encode()
		if err != nil {
			return nil, err
		}
		if _, err := st.Update(ctx, enc, rev); errors.Is(err, ErrCardKeysChanged) {
			continue
		} else if err != nil {
			return nil, err
		}
		return next, nil
	}
	return nil, fmt.Errorf("cardsig: the stored key set kept changing; try again")
}

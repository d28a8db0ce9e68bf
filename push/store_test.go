package push_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/taskstore"
)

// The store on its own: the per-task limit (a replaced config does not
// count twice), not-found errors as -32001, oldest first, pages, delete.
func TestStore(t *testing.T) {
	b := testBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := push.OpenStore(ctx, b, push.Config{MaxConfigsPerTask: 2, Logger: quiet()})
	require.NoError(t, err)
	id := uuid.NewString()
	rec, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: "echo", Owner: "bob",
		Task: a2a.Task{ID: id, ContextID: uuid.NewString(), Status: a2a.TaskStatus{State: a2a.StateSubmitted}}})
	require.NoError(t, err)

	save := func(cfgID string) error {
		_, err := s.Save(ctx, rec, a2a.TaskPushNotificationConfig{ID: cfgID, URL: "https://hooks.example.com/" + cfgID}, a2a.V03)
		return err
	}
	require.NoError(t, s.CheckRoom(ctx, id))
	require.NoError(t, save("a"))
	require.NoError(t, save("b"))
	require.NoError(t, save("a"), "replacing a config is within the limit")
	require.ErrorIs(t, save("c"), a2a.ErrInvalidParams)
	require.ErrorIs(t, s.CheckRoom(ctx, id), a2a.ErrInvalidParams)

	pr, err := s.Get(ctx, id, "b")
	require.NoError(t, err)
	require.Equal(t, "bob", pr.Owner)
	require.Equal(t, a2a.V03, pr.Version)
	_, err = s.Get(ctx, id, "zz")
	require.ErrorIs(t, err, a2a.ErrTaskNotFound)
	first, err := s.First(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "a", first.Config.ID)

	list, err := s.List(ctx, id)
	require.NoError(t, err)
	require.Len(t, list, 2)
	page, next := push.Page(list, 0, 1)
	require.Len(t, page, 1)
	require.NotEmpty(t, next)
	start, err := push.ParsePageToken(next)
	require.NoError(t, err)
	page, next = push.Page(list, start, 1)
	require.Equal(t, "b", page[0].Config.ID)
	require.Empty(t, next)
	_, err = push.ParsePageToken("%%")
	require.ErrorIs(t, err, a2a.ErrInvalidParams)

	require.NoError(t, s.Delete(ctx, id, "a"))
	_, err = s.Get(ctx, id, "a")
	require.True(t, errors.Is(err, a2a.ErrTaskNotFound), "%v", err)
	require.NoError(t, s.CheckRoom(ctx, id))
	_, err = s.First(ctx, uuid.NewString())
	require.ErrorIs(t, err, a2a.ErrTaskNotFound)
}

package edge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The auth file's skills= field: which extra skills of extended cards
// each principal sees. Lines without it keep their meaning; a principal
// without it sees every skill.
func TestAuthFileSkills(t *testing.T) {
	text := strings.Join([]string{
		"# who sees what",
		"alice " + secretA,
		"bob:" + secretB + " skills=echo-data,planner/*",
		"bob " + secretB + "x  skills=planner/*,echo-data", // the same list, another order
		"carol=" + secretC + "\tskills=-",
		"dave dave-0123456789abcdef skills=upper/shout",
	}, "\n")
	creds, err := ParseAuthText(text)
	require.NoError(t, err)
	assert.Equal(t, []string{secretB, secretB + "x"}, creds.Secrets["bob"])
	a, err := NewAuthFrom(creds)
	require.NoError(t, err)
	see := a.skillVisible()
	require.NotNil(t, see)
	for _, c := range []struct {
		principal, agent, skill string
		want                    bool
	}{
		{"alice", "echo", "echo-data", true}, // no skills=: everything
		{"", "echo", "echo-data", true},      // no principal known: no limit known either
		{"bob", "echo", "echo-data", true},   // a bare skill id, any agent
		{"bob", "other", "echo-data", true},
		{"bob", "planner", "anything", true}, // agent/*
		{"bob", "echo", "secret", false},
		{"carol", "echo", "echo-data", false}, // "-": none
		{"dave", "upper", "shout", true},
		{"dave", "echo", "shout", false}, // agent/skill is that agent's only
	} {
		assert.Equal(t, c.want, see(c.principal, c.agent, c.skill), "%+v", c)
	}

	// ParseCredentials reads the same file and keeps only secrets.
	secrets, err := ParseCredentials(text)
	require.NoError(t, err)
	assert.Len(t, secrets, 4)

	// Without any skills= there is no filter at all.
	plain, err := NewAuth(map[string][]string{"alice": {secretA}})
	require.NoError(t, err)
	assert.Nil(t, plain.skillVisible())
	assert.Nil(t, (*Auth)(nil).skillVisible())

	for _, bad := range []string{
		"alice " + secretA + " skills=",
		"alice " + secretA + " skills=a,,b",
		"alice " + secretA + " skills=/x",
		"alice " + secretA + " skills=*/x",
		"alice " + secretA + " skills=a/b/c",
		"alice " + secretA + " colour=blue",
		"alice " + secretA + " skills=a\nalice " + secretA + "2 skills=b",
	} {
		_, err := ParseAuthText(bad)
		assert.Error(t, err, bad)
	}
}

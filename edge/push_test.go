package edge

import (
	"encoding/json"
	"testing"
)

func TestPushIDParams(t *testing.T) {
	for _, c := range []struct {
		json, task, cfg string
	}{
		{`{"taskId":"t1","id":"c1"}`, "t1", "c1"},                   // 1.0
		{`{"id":"t1","pushNotificationConfigId":"c1"}`, "t1", "c1"}, // 0.3
		{`{"id":"t1"}`, "t1", ""},                                   // 0.3 get/list
		{`{"taskId":"t1","pushNotificationConfigId":"c1"}`, "t1", "c1"},
	} {
		var p pushIDParams
		if err := json.Unmarshal([]byte(c.json), &p); err != nil {
			t.Fatal(err)
		}
		if task, cfg := p.ids(); task != c.task || cfg != c.cfg {
			t.Errorf("%s: got %q %q", c.json, task, cfg)
		}
	}
}

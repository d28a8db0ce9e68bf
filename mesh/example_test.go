package mesh_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// A whole mesh in this process: send the echo agent a message over
// A2A 1.0 JSON-RPC and print its answer.
func Example() {
	dir, err := os.MkdirTemp("", "mesh-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := mesh.Start(ctx, mesh.Config{
		Listen:  "127.0.0.1:0", // a free port; m.URL() names it
		DataDir: dir,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
		{"role":"ROLE_USER","messageId":"m-1","parts":[{"text":"hello"}]}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL()+"/agents/echo", strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()

	// A blocking send answers with the task once it is done.
	var reply struct {
		Result struct {
			Task struct {
				Status    struct{ State string }
				Artifacts []struct {
					Name  string
					Parts []struct{ Text string }
				}
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		log.Fatal(err)
	}
	task := reply.Result.Task
	fmt.Println(task.Status.State)
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			fmt.Printf("%s: %s\n", a.Name, p.Text)
		}
	}
	// Output:
	// TASK_STATE_COMPLETED
	// echo: hello
}

// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
)

// runAgent is the demo's agent: a weather assistant on the official openai-go client, configured
// from the environment only (OPENAI_BASE_URL, which runagain's proxy points at itself). It asks
// the model with its system prompt and the user's question (RUNAGAIN_CASE_INPUT when
// `runagain test` gives one, else DEMO_QUESTION), runs the get_weather tool the model asks for,
// sends the result back and prints the model's final answer. Exit code 0 on an answer, 2 on a
// model error, 3 when the model keeps calling tools.
func runAgent() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient()
	question := os.Getenv("RUNAGAIN_CASE_INPUT")
	if question == "" {
		question = os.Getenv("DEMO_QUESTION")
	}
	if question == "" {
		question = "What is the weather in Paris?"
	}
	params := openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a weather agent. Use the get_weather tool, then answer in one sentence."),
			openai.UserMessage(question),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "get_weather", Description: openai.String("Current weather in a city"),
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required": []string{"city"}},
		})},
	}
	for step := 0; step < 5; step++ {
		c, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo agent: model error:", err)
			return 2
		}
		msg := c.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			return 0
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			var args struct {
				City string `json:"city"`
			}
			_ = json.Unmarshal([]byte(tc.Function.Arguments), &args)
			params.Messages = append(params.Messages, openai.ToolMessage(weather(args.City), tc.ID))
		}
	}
	fmt.Fprintln(os.Stderr, "demo agent: too many steps")
	return 3
}

// weather is the agent's tool: a fixed reading, so every run sees the same result.
func weather(city string) string {
	if city == "" {
		city = "the city"
	}
	return fmt.Sprintf(`{"city":%q,"sky":"sunny","temperature_c":21}`, city)
}

// upstream is a scripted OpenAI-compatible chat completions server on 127.0.0.1: the first call
// of a conversation gets a get_weather tool call, the call carrying the tool's result the final
// answer. It answers with the model the request named and counts the calls it got.
type upstream struct {
	srv   *http.Server
	url   string
	calls atomic.Int64
}

func startUpstream() (*upstream, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{url: "http://" + l.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = u.srv.Serve(l) }()
	return u, nil
}

func (u *upstream) close() { _ = u.srv.Close() }

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"the demo upstream serves POST /v1/chat/completions only"}}`, http.StatusNotFound)
		return
	}
	n := u.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	model := req.Model
	if model == "gpt-4o-mini" {
		model = "gpt-4o-mini-2024-07-18"
	}
	w.Header().Set("Content-Type", "application/json")
	if len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool" {
		fmt.Fprintf(w, `{"id":"chatcmpl-demo-%d","object":"chat.completion","created":1764460800,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny in Paris, 21 C."},"finish_reason":"stop"}],"usage":{"prompt_tokens":84,"completion_tokens":10,"total_tokens":94}}`, n, model)
		return
	}
	fmt.Fprintf(w, `{"id":"chatcmpl-demo-%d","object":"chat.completion","created":1764460800,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_weather_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":71,"completion_tokens":15,"total_tokens":86}}`, n, model)
}

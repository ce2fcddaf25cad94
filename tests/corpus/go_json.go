// go_json: encoding/json: the request into a struct and a generic map, the answers marshalled.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type request struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Tags  []string          `json:"tags"`
	Meta  map[string]string `json:"meta,omitempty"`
}

type response struct {
	Greeting string         `json:"greeting"`
	Repeated []string       `json:"repeated"`
	Tags     []string       `json:"sorted_tags"`
	Lengths  map[string]int `json:"tag_lengths"`
	Echo     request        `json:"echo"`
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		fmt.Printf("bad request: %v\n", err)
		return
	}
	resp := response{
		Greeting: "Hello, " + req.Name + "!",
		Tags:     append([]string(nil), req.Tags...),
		Lengths:  map[string]int{},
		Echo:     req,
	}
	for i := 0; i < req.Count && i < 10; i++ {
		resp.Repeated = append(resp.Repeated, strings.Repeat(req.Name, i+1))
	}
	sort.Strings(resp.Tags)
	for _, t := range req.Tags {
		resp.Lengths[strings.ToUpper(t)] = len(t)
	}
	out, err := json.MarshalIndent(resp, "", "  ")
	if err != nil {
		fmt.Printf("marshal: %v\n", err)
		return
	}
	fmt.Println(string(out))

	// the same request through interface{}: numbers as float64, map keys sorted on the way out
	var generic map[string]interface{}
	if err := json.Unmarshal(raw, &generic); err != nil {
		fmt.Printf("generic: %v\n", err)
		return
	}
	generic["count_type"] = fmt.Sprintf("%T", generic["count"])
	again, _ := json.Marshal(generic)
	fmt.Println(string(again))

	var bad request
	err = json.Unmarshal([]byte(`{"count": "three"}`), &bad)
	fmt.Printf("a string for an int: %v\n", err)
}

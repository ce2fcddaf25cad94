// go_hello: reads its request from stdin and greets it, as tests/guest/hello.c does.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	name := strings.TrimRight(string(req), "\n")
	if name == "" {
		name = "world"
	}
	fmt.Printf("Hello, %s!\n", name)
}

// go_panic: nil-pointer dereferences (a read, a write) and other runtime panics, recovered.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

type node struct {
	next *node
	val  int
}

// catch runs f and returns what it panicked with, as text, and whether it was a runtime.Error
func catch(f func()) (msg string, isRuntime bool) {
	defer func() {
		r := recover()
		if r == nil {
			msg = "no panic"
			return
		}
		var re runtime.Error
		if err, ok := r.(error); ok && errors.As(err, &re) {
			isRuntime = true
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return
}

//go:noinline
func load(p *node) int { return p.val }

//go:noinline
func store(p *node, v int) { p.val = v }

func main() {
	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	name := strings.TrimRight(string(req), "\n")
	fmt.Printf("go_panic: request %q\n", name)

	var p *node
	msg, rt := catch(func() { fmt.Println("read through nil gave", load(p)) })
	fmt.Printf("nil read: %s (runtime.Error: %v)\n", msg, rt)
	msg, rt = catch(func() { store(p, len(name)) })
	fmt.Printf("nil write: %s (runtime.Error: %v)\n", msg, rt)

	idx := len(name) + 3
	msg, rt = catch(func() { fmt.Println([]byte(name)[idx]) })
	fmt.Printf("index: %s (runtime.Error: %v)\n", msg, rt)
	zero := len(name) - len(name)
	msg, rt = catch(func() { fmt.Println(len(name) / zero) })
	fmt.Printf("divide: %s (runtime.Error: %v)\n", msg, rt)
	msg, rt = catch(func() { panic("custom: " + name) })
	fmt.Printf("panic(string): %s (runtime.Error: %v)\n", msg, rt)
	msg, _ = catch(func() {})
	fmt.Printf("nothing: %s\n", msg)
}

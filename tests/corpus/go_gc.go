// go_gc: allocation-heavy work, runtime.GC() and runtime.NumGoroutine(); stable facts printed.
package main

import (
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

type tree struct {
	left, right *tree
	val         uint64
}

func build(depth int, v uint64) *tree {
	if depth == 0 {
		return &tree{val: v}
	}
	return &tree{build(depth-1, 2*v), build(depth-1, 2*v+1), v}
}

func (t *tree) sum() uint64 {
	if t == nil {
		return 0
	}
	return t.val + t.left.sum() + t.right.sum()
}

func main() {
	start := runtime.NumGoroutine()
	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	name := strings.TrimRight(string(req), "\n")
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := h.Sum64() % 1000
	fmt.Printf("go_gc: request %q\n", name)
	fmt.Println("goroutines at start:", start)

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// about 200 MB allocated in all, little of it live at once
	var check uint64
	for round := uint64(0); round < 40; round++ {
		check += build(16, seed+round).sum()
		m := make(map[uint64][]byte)
		for i := uint64(0); i < 2000; i++ {
			m[i] = make([]byte, 256+i%512)
			m[i][0] = byte(i)
		}
		for i := uint64(0); i < 2000; i += 97 {
			check += uint64(m[i][0])
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	fmt.Println("checksum:", check)
	fmt.Println("collections ran:", after.NumGC > before.NumGC)
	fmt.Println("allocated over 100 MB:", after.TotalAlloc-before.TotalAlloc > 100<<20)
	fmt.Println("live heap after runtime.GC under 64 MB:", after.HeapAlloc < 64<<20)

	// 16 goroutines parked on a channel, counted, released, gone
	gate := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			b := build(10, uint64(i)).sum()
			mu.Lock()
			total += int(b % 1000)
			mu.Unlock()
		}(i)
	}
	fmt.Println("goroutines while 16 wait:", runtime.NumGoroutine())
	close(gate)
	wg.Wait()
	gone := false
	for i := 0; i < 2000 && !gone; i++ {
		gone = runtime.NumGoroutine() == start
		if !gone {
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Println("their total:", total)
	fmt.Println("back to the goroutines at start:", gone)
}

// go_goroutines: many goroutines compute parts of a result, combined with a WaitGroup, a Mutex.
package main

import (
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
)

const workers = 64

func work(seed uint64, i int) uint64 {
	x, sum := seed+uint64(i), uint64(0)
	for k := 0; k < 50000; k++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 29
		sum += x >> 44
		if k%10000 == 0 {
			runtime.Gosched() // interleave the goroutines even on one thread
		}
	}
	return sum
}

func main() {
	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	name := strings.TrimRight(string(req), "\n")
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := h.Sum64()

	var wg sync.WaitGroup
	var mu sync.Mutex
	results := make([]uint64, workers)
	var total uint64
	seen := make(map[int]bool)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			v := work(seed, i)
			results[i] = v
			mu.Lock()
			total += v
			seen[i] = true
			mu.Unlock()
		}(i)
	}
	wg.Wait()

	var serial, slots uint64
	for i := 0; i < workers; i++ {
		serial += work(seed, i)
		slots += results[i]
	}
	fmt.Printf("go_goroutines: request %q\n", name)
	fmt.Printf("goroutines that reported: %d of %d\n", len(seen), workers)
	fmt.Printf("total under the mutex: %d\n", total)
	fmt.Printf("equal to the sum of the slots: %v\n", total == slots)
	fmt.Printf("equal to a serial run: %v\n", total == serial)
}

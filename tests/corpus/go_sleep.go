// go_sleep: time.Sleep, time.After, timers, a ticker, AfterFunc, a context deadline: facts only.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	fmt.Printf("go_sleep: request %q\n", strings.TrimRight(string(req), "\n"))

	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	fmt.Println("slept at least 20ms:", time.Since(start) >= 20*time.Millisecond)

	never := make(chan int)
	start = time.Now()
	select {
	case <-time.After(10 * time.Millisecond):
		fmt.Println("time.After fired after at least 10ms:", time.Since(start) >= 10*time.Millisecond)
	case <-never:
		fmt.Println("received from a channel nobody sends on")
	}

	pending := time.NewTimer(time.Hour)
	fmt.Println("stopped a pending timer:", pending.Stop())

	start = time.Now()
	ticker := time.NewTicker(5 * time.Millisecond)
	ticks := 0
	for range ticker.C {
		if ticks++; ticks == 3 {
			break
		}
	}
	ticker.Stop()
	fmt.Println("3 ticks of 5ms took at least 15ms:", time.Since(start) >= 15*time.Millisecond)

	done := make(chan bool)
	time.AfterFunc(5*time.Millisecond, func() { done <- true })
	fmt.Println("AfterFunc ran:", <-done)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	<-ctx.Done()
	fmt.Println("context:", ctx.Err())

	// many goroutines sleeping at once: each wakes, none before its own deadline
	type wake struct {
		ms    int
		early bool
	}
	woke := make(chan wake, 5)
	start = time.Now()
	for _, ms := range []int{25, 5, 15, 20, 10} {
		go func(ms int) {
			d := time.Duration(ms) * time.Millisecond
			time.Sleep(d)
			woke <- wake{ms, time.Since(start) < d}
		}(ms)
	}
	sum, early := 0, 0
	for i := 0; i < 5; i++ {
		w := <-woke
		sum += w.ms
		if w.early {
			early++
		}
	}
	fmt.Printf("5 sleeping goroutines woke (%d ms in all), early: %d\n", sum, early)
}

// go_channels: a pipeline started before the request, buffered and unbuffered channels, select.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// stages: request -> bytes (unbuffered) -> 3 squarers (fan-out) -> buffered -> summer
func pipeline(in <-chan string, out chan<- [2]int) {
	bytes := make(chan int)
	squares := make(chan int, 16)
	go func() {
		for s := range in {
			for i := 0; i < len(s); i++ {
				bytes <- int(s[i])
			}
		}
		close(bytes)
	}()
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range bytes {
				squares <- b * b
			}
		}()
	}
	go func() {
		wg.Wait()
		close(squares)
	}()
	go func() {
		n, sum := 0, 0
		for v := range squares {
			n++
			sum += v
		}
		out <- [2]int{n, sum}
	}()
}

func main() {
	// the pipeline's goroutines are started by the initialisation and wait for the request
	in := make(chan string)
	out := make(chan [2]int)
	pipeline(in, out)

	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
	name := strings.TrimRight(string(req), "\n")
	fmt.Printf("go_channels: request %q\n", name)
	for i := 0; i < 100; i++ {
		in <- name
	}
	close(in)
	r := <-out
	want := 0
	for i := 0; i < len(name); i++ {
		want += int(name[i]) * int(name[i])
	}
	fmt.Printf("pipeline: %d values, sum of squares %d, as computed serially: %v\n", r[0], r[1],
		r[1] == 100*want)

	// select over two producers until both are closed; a closed channel is set to nil
	a, b := make(chan int), make(chan int, 4)
	quit := make(chan struct{})
	go func(c chan<- int) {
		for i := 0; i < 500; i++ {
			c <- i
		}
		close(c)
	}(a)
	go func(c chan<- int) {
		for i := 0; i < 300; i++ {
			c <- 2 * i
		}
		close(c)
	}(b)
	na, nb, sa, sb := 0, 0, 0, 0
	for a != nil || b != nil {
		select {
		case v, ok := <-a:
			if !ok {
				a = nil
				continue
			}
			na, sa = na+1, sa+v
		case v, ok := <-b:
			if !ok {
				b = nil
				continue
			}
			nb, sb = nb+1, sb+v
		case <-quit:
			fmt.Println("quit closed: impossible")
		}
	}
	fmt.Printf("select: %d from a (sum %d), %d from b (sum %d)\n", na, sa, nb, sb)

	empty := make(chan int)
	select {
	case <-empty:
		fmt.Println("received from an empty channel")
	default:
		fmt.Println("select default on an empty channel: true")
	}

	// a ping-pong over unbuffered channels: strict alternation
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	v := 0
	for i := 0; i < 1000; i++ {
		ping <- v
		v = <-pong
	}
	close(ping)
	_, open := <-pong
	fmt.Printf("ping-pong: %d after 1000 rounds, pong closed: %v\n", v, !open)
}

// Command pingpong is the Go server of build/bench/pingpong: a goroutine
// per connection doing blocking Read / Write (the netpoller underneath).
// Prints "port N" once it listens on 127.0.0.1; runs until killed.
package main

import (
	"fmt"
	"net"
	"os"
)

func echo(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 256)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("port %d\n", l.Addr().(*net.TCPAddr).Port)
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go echo(c) // TCP_NODELAY is Go's default
	}
}

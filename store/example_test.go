package store_test

import (
	"fmt"

	"github.com/mcpx-dev/mcpx/store"
)

func ExampleNewID() {
	sha := "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b"
	id := store.NewID("Tableau Server", sha, store.DefaultIDPrefixLen)
	fmt.Println(id, store.ValidID(id))
	// Output: tableau-server_1a2b3c4d5e6f true
}

func ExampleAllocateID() {
	a := "d96f6049fc1cffc1e17026bec61c641a41bb81721f596e7001954996c0d89ca5"
	b := "d96f6049fc1c23390a0bd90246a5b0976a282530afa136d3e5d4d53881daffbc"
	taken := map[string]string{store.NewID("clash", a, 12): a}
	owner := func(id string) (string, bool) { sha, ok := taken[id]; return sha, ok }
	idA, _ := store.AllocateID("clash", a, 12, owner)
	idB, _ := store.AllocateID("clash", b, 12, owner)
	fmt.Println(idA)
	fmt.Println(idB)
	// Output:
	// clash_d96f6049fc1c
	// clash_d96f6049fc1c2339
}

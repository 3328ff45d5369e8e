package keyspace_test

import (
	"fmt"

	"tollgate/keyspace"
)

func ExampleSpace() {
	s := keyspace.Space{} // prefix "tg"
	fmt.Println(s.PlanBucket("abcdefghij", "a1b2c3"))
	fmt.Println(s.PlanMethodBucket("abcdefghij", "a1b2c3", "x1y2z3w4v5", "prod", "GET", "/pets/{petId}"))
	fmt.Println(s.Quota("abcdefghij", "a1b2c3"))
	fmt.Println(s.StageBucket("x1y2z3w4v5", "prod", "GET", "/pets"))
	fmt.Println(s.AccountBucket())
	fmt.Println(s.KeyRecord("9f86d081"))
	// Output:
	// tg:{k:abcdefghij}:tb:a1b2c3
	// tg:{k:abcdefghij}:tb:a1b2c3:x1y2z3w4v5:prod:GET/pets/{petId}
	// tg:{k:abcdefghij}:q:a1b2c3
	// tg:{s:x1y2z3w4v5:prod}:tb:GET/pets
	// tg:{acct}:tb
	// tg:key:{9f86d081}
}

func ExampleSlot() {
	fmt.Println(keyspace.Slot("tg:{k:abcdefghij}:q:a1b2c3") == keyspace.Slot("tg:{k:abcdefghij}:tb:a1b2c3"))
	// Output: true
}

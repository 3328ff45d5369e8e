// Command wiregen writes script/wire_gen.go and script/lua/wire.lua from
// the layouts of script/wire.go (go generate ./script runs it in script/).
package main

import (
	"fmt"
	"os"

	"tollgate/script/internal/wirespec"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
}

func run() error {
	src, err := os.ReadFile("wire.go")
	if err != nil {
		return err
	}
	sp, err := wirespec.Parse(src)
	if err != nil {
		return err
	}
	goSrc, err := wirespec.RenderGo(sp)
	if err != nil {
		return err
	}
	if err := os.WriteFile("wire_gen.go", goSrc, 0o644); err != nil {
		return err
	}
	return os.WriteFile("lua/wire.lua", wirespec.RenderLua(sp), 0o644)
}

package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version is the release, set when linking: go build -ldflags
// "-X main.version=v1.2.3" (make build sets it from git describe). Empty
// means the module version and VCS revision Go records in the build.
var version string

type versionCmd struct{}

// Run prints the version line.
func (versionCmd) Run() error {
	fmt.Println(versionLine())
	return nil
}

// versionLine is "tollgate <version> (<details>)": the linked version, or
// else the module's; then the VCS revision, its time and "modified" when
// the tree had uncommitted changes, as recorded by the Go toolchain, and
// the Go version.
func versionLine() string {
	v := version
	var details []string
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		details = append(details, vcsDetails(info.Settings)...)
		details = append(details, info.GoVersion)
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	return fmt.Sprintf("tollgate %s (%s)", v, strings.Join(details, ", "))
}

// vcsDetails picks the revision (12 characters), its time and the
// modified flag from the build settings.
func vcsDetails(settings []debug.BuildSetting) []string {
	var out []string
	for _, s := range settings {
		switch {
		case s.Key == "vcs.revision":
			out = append(out, "commit "+s.Value[:min(12, len(s.Value))])
		case s.Key == "vcs.time":
			out = append(out, s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			out = append(out, "modified")
		}
	}
	return out
}

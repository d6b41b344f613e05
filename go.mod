module github.com/mcpx-dev/mcpx

go 1.26

require (
	github.com/hashicorp/go-hclog v1.6.3
	github.com/segmentio/asm v1.2.1
	github.com/tidwall/gjson v1.20.0
	github.com/tidwall/sjson v1.2.5
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	golang.org/x/sys v0.0.0-20220503163025-988cb79eb6c6 // indirect
)

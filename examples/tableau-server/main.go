// Command tableau-server is a small stdio MCP server that answers like
// Tableau's: list_workbooks, download_workbook (a real PDF as base64 inside
// a JSON text block, the way Tableau's server returns it) and
// get_view_as_image (a PNG image block). It is the upstream of mcpx's
// quickstart and works offline.
//
//	go run ./examples/tableau-server        # speaks MCP on stdin/stdout
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// salesPDF is a one-page PDF report ("Sales Dashboard - FY2025").
//
//go:embed sales_dashboard.pdf
var salesPDF []byte

type workbook struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Project string `json:"project"`
	Views   int    `json:"views"`
}

var workbooks = []workbook{
	{ID: "wb-7f3a", Name: "Sales Dashboard", Project: "Finance", Views: 3},
	{ID: "wb-19c2", Name: "Regional Pipeline", Project: "Sales", Views: 5},
	{ID: "wb-44d0", Name: "Support Backlog", Project: "Operations", Views: 2},
}

func main() {
	if err := server.ServeStdio(newServer()); err != nil {
		fmt.Fprintln(os.Stderr, "tableau-server:", err)
		os.Exit(1)
	}
}

func newServer() *server.MCPServer {
	s := server.NewMCPServer("tableau-example", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("list_workbooks",
		mcp.WithDescription("List the workbooks on the Tableau site."),
	), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(map[string]any{"workbooks": workbooks})
		return mcp.NewToolResultText(string(b)), nil
	})
	s.AddTool(mcp.NewTool("download_workbook",
		mcp.WithDescription("Download a workbook as PDF. Returns JSON with the file as base64 in \"content\"."),
		mcp.WithString("workbook_id", mcp.Required(), mcp.Description("the workbook's id, from list_workbooks")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wb, ok := find(req.GetString("workbook_id", ""))
		if !ok {
			return mcp.NewToolResultError("no workbook with that id; call list_workbooks"), nil
		}
		b, _ := json.Marshal(map[string]any{
			"workbook_id": wb.ID, "name": wb.Name, "format": "pdf",
			"content": base64.StdEncoding.EncodeToString(salesPDF),
		})
		return mcp.NewToolResultText(string(b)), nil
	})
	s.AddTool(mcp.NewTool("get_view_as_image",
		mcp.WithDescription("Render a workbook's view as a PNG image."),
		mcp.WithString("workbook_id", mcp.Required(), mcp.Description("the workbook's id")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wb, ok := find(req.GetString("workbook_id", ""))
		if !ok {
			return mcp.NewToolResultError("no workbook with that id; call list_workbooks"), nil
		}
		return mcp.NewToolResultImage("View 1 of "+wb.Name, base64.StdEncoding.EncodeToString(chart()), "image/png"), nil
	})
	return s
}

func find(id string) (workbook, bool) {
	for _, w := range workbooks {
		if w.ID == id {
			return w, true
		}
	}
	return workbook{}, false
}

// chart draws a 480x270 bar chart.
func chart() []byte {
	const w, h = 480, 270
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.White)
		}
	}
	bars := []int{120, 180, 90, 210, 160, 240}
	for i, bh := range bars {
		x0 := 30 + i*72
		for y := h - 20 - bh; y < h-20; y++ {
			for x := x0; x < x0+48; x++ {
				img.Set(x, y, color.RGBA{R: 31, G: 119, B: 180, A: 255})
			}
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

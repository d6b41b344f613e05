// Command helpdesk is a small stdio MCP server that answers like a
// helpdesk's: get_ticket returns a ticket as JSON in a text block, with its
// attachments as base64 (a PDF and a PNG) and its whole history (40
// entries). It is the upstream of the newcomer walkthrough
// (examples/newcomer/README.md) and works offline.
//
//	go run ./examples/newcomer/helpdesk               # speaks MCP on stdin/stdout
//	go run ./examples/newcomer/helpdesk --print T-1042 # prints get_ticket's result
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	print := flag.String("print", "", "print get_ticket's result for the ticket `ID` and exit")
	flag.Parse()
	if *print != "" {
		b, err := json.MarshalIndent(result(*print), "", "  ")
		if err != nil {
			fmt.Fprintln(os.Stderr, "helpdesk:", err)
			os.Exit(1)
		}
		fmt.Printf("%s\n", b)
		return
	}
	if err := server.ServeStdio(newServer()); err != nil {
		fmt.Fprintln(os.Stderr, "helpdesk:", err)
		os.Exit(1)
	}
}

func newServer() *server.MCPServer {
	s := server.NewMCPServer("helpdesk-example", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("get_ticket",
		mcp.WithDescription("Get a support ticket with its attachments (base64) and its full history."),
		mcp.WithString("id", mcp.Required(), mcp.Description("the ticket's id, such as T-1042")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := req.GetString("id", "")
		if !strings.HasPrefix(id, "T-") {
			return mcp.NewToolResultError("no ticket with that id; ids look like T-1042"), nil
		}
		return result(id), nil
	})
	return s
}

// result is get_ticket's answer: the ticket as JSON text.
func result(id string) *mcp.CallToolResult {
	b, _ := json.Marshal(ticket(id))
	return mcp.NewToolResultText(string(b))
}

type attachment struct {
	Name string `json:"name"`
	MIME string `json:"mime_type"`
	Data string `json:"data"`
}

type entry struct {
	At   string `json:"at"`
	By   string `json:"by"`
	Note string `json:"note"`
}

// ticket builds the same ticket for the same id, every time.
func ticket(id string) map[string]any {
	var history []entry
	people := []string{"ana@example.com", "support-bot", "li@example.com", "sam@example.com"}
	for i := range 40 {
		history = append(history, entry{
			At:   fmt.Sprintf("2026-03-%02dT%02d:%02d:00Z", 1+i/2, 9+i%8, (i*7)%60),
			By:   people[i%len(people)],
			Note: fmt.Sprintf("Update %d on %s: checked the printer queue, restarted spooler, customer replied.", i+1, id),
		})
	}
	return map[string]any{
		"id":     id,
		"title":  "Printer on floor 3 prints blank pages",
		"status": "open",
		"attachments": []attachment{
			{Name: "invoice-march.pdf", MIME: "application/pdf", Data: base64.StdEncoding.EncodeToString(invoicePDF(id))},
			{Name: "test-page.png", MIME: "image/png", Data: base64.StdEncoding.EncodeToString(testPage())},
		},
		"history": history,
	}
}

// invoicePDF is a small one-page PDF naming the ticket.
func invoicePDF(id string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n")
	for i := range 30 {
		fmt.Fprintf(&b, "%% invoice line %02d for %s: toner cartridge, qty %d\n", i, id, 1+i%3)
	}
	b.WriteString("trailer\n<< /Root 1 0 R >>\n%%EOF\n")
	return b.Bytes()
}

// testPage is a 64x64 PNG of stripes: what the printer should have printed.
func testPage() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{R: uint8(x * 4), G: uint8(y * 4), B: uint8((x ^ y) * 4), A: 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

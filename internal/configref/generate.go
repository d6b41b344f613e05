package configref

// The reference is remade from the code with "go generate ./internal/configref";
// TestReferenceIsCurrent fails while it is stale.
//go:generate go run ./configrefgen

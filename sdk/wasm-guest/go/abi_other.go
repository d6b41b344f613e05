//go:build !wasip1

package guest

// TestHost stands in for the host outside wasip1, so that a plugin's logic
// runs under a plain "go test". Set its fields before calling Handle.
var TestHost struct {
	// Log receives the lines of Log; nil drops them.
	Log func(level Level, msg string)
	// Values answers GetValue by path; Config answers GetConfig by key.
	Values, Config map[string][]byte
}

func hostLog(level Level, msg string) {
	if TestHost.Log != nil {
		TestHost.Log(level, msg)
	}
}

func hostGetConfig(key string) ([]byte, bool) {
	v, ok := TestHost.Config[key]
	return v, ok
}

func hostGetValue(path string) ([]byte, bool) {
	v, ok := TestHost.Values[path]
	return v, ok
}

package kernel

import (
	"encoding/json"
	"fmt"
	"os"
)

// ConnectionInfo is the content of a Jupyter connection file: where to bind
// the five channels and how to sign messages.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	ControlPort     int    `json:"control_port"`
	StdinPort       int    `json:"stdin_port"`
	IOPubPort       int    `json:"iopub_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// LoadConnectionFile reads and checks a connection file.
func LoadConnectionFile(path string) (ConnectionInfo, error) {
	var c ConnectionInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("connection file: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("connection file %s is not valid JSON: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("connection file %s: %w", path, err)
	}
	return c, nil
}

// Validate checks the fields a kernel needs.
func (c ConnectionInfo) Validate() error {
	switch c.Transport {
	case "tcp", "ipc":
	default:
		return fmt.Errorf("transport %q is not supported (use \"tcp\" or \"ipc\")", c.Transport)
	}
	if c.IP == "" {
		return fmt.Errorf("no ip")
	}
	if c.Key != "" && c.SignatureScheme != "hmac-sha256" {
		return fmt.Errorf("signature_scheme %q is not supported (use \"hmac-sha256\")", c.SignatureScheme)
	}
	for name, p := range map[string]int{"shell_port": c.ShellPort, "control_port": c.ControlPort,
		"stdin_port": c.StdinPort, "iopub_port": c.IOPubPort, "hb_port": c.HBPort} {
		if p < 0 || p > 65535 || (p == 0 && c.Transport == "tcp") {
			return fmt.Errorf("%s %d is not a port number in 1..65535", name, p)
		}
	}
	return nil
}

// endpoint is the ZeroMQ address of one channel.
func (c ConnectionInfo) endpoint(port int) string {
	if c.Transport == "ipc" {
		return fmt.Sprintf("ipc://%s-%d", c.IP, port)
	}
	return fmt.Sprintf("tcp://%s:%d", c.IP, port)
}

package tollgate

import (
	"encoding/json"
	"fmt"
)

// Tool is a tool the model may call. Only function tools exist in the chat API.
type Tool struct {
	Type     string             `json:"type"`
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition describes a function: Parameters is its JSON Schema.
type FunctionDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// FunctionTool builds a function tool; parameters is a JSON Schema (nil: none).
func FunctionTool(name, description string, parameters json.RawMessage) Tool {
	return Tool{Type: "function", Function: FunctionDefinition{Name: name, Description: description, Parameters: parameters}}
}

// ToolCall is a call the model made, in a whole answer (and in requests that replay the conversation):
// a function call (Type "function", Function), or a call to a custom tool (Type "custom", Custom).
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
	// Custom is a call to a custom tool (sent as Extra "tools": [{"type": "custom", ...}]).
	Custom *CustomToolCall `json:"custom,omitempty"`
}

// CustomToolCall names the custom tool and its input, free text written by the model.
type CustomToolCall struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// MarshalJSON writes a custom tool call without an empty function, as OpenAI writes it.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	if c.Custom != nil && c.Function == (FunctionCall{}) {
		return json.Marshal(struct {
			ID     string          `json:"id"`
			Type   string          `json:"type"`
			Custom *CustomToolCall `json:"custom"`
		}{c.ID, c.Type, c.Custom})
	}
	return json.Marshal(plain(c))
}

// FunctionCall names the function and its arguments, a JSON text written by the model.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// DecodeArguments decodes the call's JSON arguments into v.
func (c FunctionCall) DecodeArguments(v any) error {
	if err := json.Unmarshal([]byte(c.Arguments), v); err != nil {
		return fmt.Errorf("tollgate: arguments of %s are not the expected JSON: %w", c.Name, err)
	}
	return nil
}

// ToolCallDelta is a piece of a tool call in a stream: the first piece of each call carries its id
// and name, the following ones more of its arguments. Index says which call a piece belongs to.
type ToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	} `json:"function"`
}

// ToolChoice says whether and which tool the model must call: a mode ("auto", "none", "required")
// or one named function.
type ToolChoice struct {
	Mode string
	// Function, when set, forces a call to this function (Mode is then ignored).
	Function string
}

// ToolChoiceAuto lets the model decide whether to call a tool (the default when tools are given).
func ToolChoiceAuto() *ToolChoice { return &ToolChoice{Mode: "auto"} }

// ToolChoiceNone forbids tool calls.
func ToolChoiceNone() *ToolChoice { return &ToolChoice{Mode: "none"} }

// ToolChoiceRequired makes the model call at least one tool.
func ToolChoiceRequired() *ToolChoice { return &ToolChoice{Mode: "required"} }

// ToolChoiceFunction forces a call to the named function.
func ToolChoiceFunction(name string) *ToolChoice { return &ToolChoice{Function: name} }

// MarshalJSON writes a mode as a string and a forced function as {"type": "function", ...}.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	if c.Function != "" {
		return json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Function}})
	}
	return json.Marshal(c.Mode)
}

// UnmarshalJSON reads either form.
func (c *ToolChoice) UnmarshalJSON(data []byte) error {
	var mode string
	if json.Unmarshal(data, &mode) == nil {
		*c = ToolChoice{Mode: mode}
		return nil
	}
	var forced struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(data, &forced); err != nil {
		return err
	}
	*c = ToolChoice{Function: forced.Function.Name}
	return nil
}

"""The text layer: the printer and the parser of the Relay-like syntax."""

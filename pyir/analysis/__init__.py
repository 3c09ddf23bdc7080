"""The analysis layer: type inference, the reference interpreter, equality and diff."""

"""The rewrite layer: visitors and mutators, the pattern language and rewrite rules."""

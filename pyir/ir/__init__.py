"""The core layer: the intern table, nodes, types, operator definitions, expressions,
traversal, lineage records and modules.  Imports only ``pyir.errors``."""

"""The core layer: the intern table, nodes, types, operator definitions, expressions,
traversal, lineage records and modules.  Imports only ``pyir.errors``."""

from . import adt as adt  # the ADT, pattern and reference kinds: declared with the core kinds

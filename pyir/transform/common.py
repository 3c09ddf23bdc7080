"""Helpers shared by the passes: the one place a pass imports from besides the core layers.

No pass imports another pass's module; what two passes share lives here.
"""

from __future__ import annotations

# -- inlining and fusion helpers (FuseOps, DefuseOps, Inline) -------------------------




# -- rewriting helpers (the other passes) ----------------------------------------------

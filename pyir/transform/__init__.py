"""Passes: the framework (``Pass``, ``Sequential``, ``PassContext``, instruments)
and the standard passes, one per module."""

from .base import (
                   FunctionPass,
                   ModulePass,
                   Pass,
                   PassContext,
                   PassInstrument,
                   PrintIRInstrument,
                   Sequential,
                   TimingInstrument,
                   function_pass,
                   module_pass,
)

__all__ = ["Pass", "ModulePass", "FunctionPass", "Sequential", "PassContext", "PassInstrument",
           "TimingInstrument", "PrintIRInstrument", "module_pass", "function_pass"]

"""Tools the agent can call for computations passages cannot give: a safe calculator, date arithmetic and
unit conversion. Same layer as ``providers``: imports nothing above it."""

from tools.errors import ToolError
from tools.registry import TOOLS, ToolResult, langchain_tools, run_tool

__all__ = ["TOOLS", "ToolError", "ToolResult", "langchain_tools", "run_tool"]

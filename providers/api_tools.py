"""The configured HTTP APIs (tools/http.py), for the runtime context and the call_api node: nodes reach
tools through providers, as the brain's computation tools do."""

from tools.errors import ToolError
from tools.http import ApiResponse, ApiTool, ApiTools, load_tools_file

__all__ = ["ApiResponse", "ApiTool", "ApiTools", "ToolError", "load_tools_file"]

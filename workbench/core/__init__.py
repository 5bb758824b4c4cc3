"""The Qt-free core: pydantic models, protocol engines, metrics and the project store.

Nothing in this package may import Qt, pyqtgraph or litellm (a test enforces it), so the CLI,
the MCP server and notebooks can reuse it headless.
"""

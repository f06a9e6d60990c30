"""The one error every tool raises for bad input, with a reason a user (or a model) can act on."""


class ToolError(ValueError):
    pass

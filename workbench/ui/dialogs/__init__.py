"""Modal dialogs. Each is opened through a function of :mod:`workbench.ui.prompts`, which tests patch."""

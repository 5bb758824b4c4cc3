"""Services between the core and the GUI: the shared project model, background workers, the
provider gateway and the runner. QtCore at most (never QtWidgets); the gateway and the runner use
no Qt at all, so the headless CLI drives them too."""
